package main

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// measure starts serve on the discovered apps, both clusters behind
// counting proxies, and takes the four figures.
func (b *scaleBench) measure(ctx context.Context, r *report) error {
	hubProxy, hubCount, err := countingProxyFor(b.cluster.Config())
	if err != nil {
		return err
	}
	defer hubProxy.Close()
	spokeProxy, spokeCount, err := countingProxyFor(b.spoke.Config())
	if err != nil {
		return err
	}
	defer spokeProxy.Close()
	// pinbot reaches the spoke through its proxy, with the placeholder
	// token the proxy replaces.
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: spokeProxy.Certificate().Raw})
	if err := b.clusterSecret(ctx, spokeProxy.URL, "counted-by-the-proxy", ca); err != nil {
		return err
	}
	kubeconfig, err := b.proxyKubeconfig(hubProxy)
	if err != nil {
		return err
	}
	cfg := filepath.Join(b.tmp, "scale.yaml")
	if err := os.WriteFile(cfg, []byte("discover:\n  - argocd: {selector: bench=scale}\n"), 0o600); err != nil {
		return err
	}
	secret := filepath.Join(b.tmp, "webhook-secret")
	if err := os.WriteFile(secret, []byte("bench-scale-secret\n"), 0o600); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return err
	}
	pprofAddr := ln.Addr().String()
	ln.Close()

	srv, err := b.startChild("scale", filepath.Join(b.tmp, "serve-scale.log"), "serve", "--config", cfg, "--kubeconfig", kubeconfig,
		"--cache-dir", filepath.Join(b.tmp, "cache-scale"), "--listen", addr, "--webhook-secret-file", secret, "--pprof-listen", pprofAddr, "--memory-limit", scaleMemoryLimit)
	if err != nil {
		return err
	}
	defer srv.stop()
	m := &scaleMetrics{addr: addr}
	var verified int
	took, err := benchPoll(ctx, 10*time.Minute, "all apps verified", func() bool {
		select {
		case <-srv.exited:
			return true // said below
		default:
		}
		verified = m.verified()
		if verified < scaleApps {
			time.Sleep(200 * time.Millisecond)
		}
		return verified == scaleApps
	})
	if err == nil && verified < scaleApps {
		err = errors.New("serve exited")
	}
	if err != nil {
		fmt.Printf("   %d of %d verified; serve's log: %s\n", verified, scaleApps, tailFile(srv.log, 20))
		return err
	}
	fmt.Printf("   serve: %d apps verified %v after its start\n", scaleApps, took.Round(100*time.Millisecond))
	r.check("1,000 apps over 2 clusters: start to all verified", took.Round(100*time.Millisecond).String(), "<= 30s", took <= 30*time.Second)

	if err := recSleep(ctx, scaleSettle, srv); err != nil {
		return err
	}
	rss, peak, file, err := procMemoryDetail(srv.cmd.Process.Pid)
	if err != nil {
		return err
	}
	r.check("1,000 apps: idle RSS of one replica, --memory-limit "+scaleMemoryLimit, fmt.Sprintf("%s (peak %s)", mb(rss), mb(peak)), "<= 150 MB", rss <= 150<<20)
	fmt.Printf("   of it: %s the executable's pages; Go: %s\n", mb(file), goMemory(addr))
	if err := saveHeap(pprofAddr, filepath.Join("hack", "bench", "out", "scale-heap.pprof")); err != nil {
		fmt.Printf("   no heap profile: %s\n", err)
	}

	h0, s0 := len(hubCount.snapshot()), len(spokeCount.snapshot())
	if err := recSleep(ctx, scaleWindow, srv); err != nil {
		return err
	}
	hub, spoke := hubCount.snapshot()[h0:], spokeCount.snapshot()[s0:]
	fmt.Printf("   idle minute, hub: %s\n", recSummary(hub))
	for _, l := range recBreakdown(hub) {
		fmt.Printf("     %s\n", l)
	}
	fmt.Printf("   idle minute, spoke: %s\n", recSummary(spoke))
	for _, l := range recBreakdown(spoke) {
		fmt.Printf("     %s\n", l)
	}
	perMin := float64(len(hub)+len(spoke)) / scaleWindow.Minutes()
	r.check("1,000 apps: API requests per idle minute, both clusters", fmt.Sprintf("%.0f", perMin), "<= 60", perMin <= 60)

	return b.podEvents(ctx, r, m)
}

// podEvents deletes one Pod of each of scaleEvents apps in turn and
// reads, from serve's histogram, how long the app's passes took until
// its replacement ran: the passes a Pod event causes.
func (b *scaleBench) podEvents(ctx context.Context, r *report, m *scaleMetrics) error {
	var means []time.Duration
	for e := range scaleEvents {
		i := e * (scaleApps / scaleEvents)
		k, name, ns := []kubernetes.Interface{b.kube, b.spokeKube}[i%2], appName(i), appNamespace(i)
		sum0, n0, err := m.passes(name)
		if err != nil {
			return err
		}
		pods, err := k.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil || len(pods.Items) == 0 {
			return fmt.Errorf("the Pods of %s: %v", name, err)
		}
		victim := pods.Items[0].Name
		if err := k.CoreV1().Pods(ns).Delete(ctx, victim, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
			return err
		}
		if _, err := benchPoll(ctx, time.Minute, "the replacement Pod of "+name+" verified", func() bool {
			pods, err := k.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
			if err != nil {
				return false
			}
			running := 0
			for _, p := range pods.Items {
				if p.Name != victim && p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].ImageID != "" {
					running++
				}
			}
			return running == scaleReplicas
		}); err != nil {
			return err
		}
		if err := recSleepPlain(ctx, 2*time.Second); err != nil { // the last passes end
			return err
		}
		sum1, n1, err := m.passes(name)
		if err != nil {
			return err
		}
		if n1 > n0 {
			means = append(means, time.Duration((sum1-sum0)/float64(n1-n0)*float64(time.Second)))
		}
	}
	if len(means) == 0 {
		return fmt.Errorf("no pass followed the Pod events")
	}
	slices.Sort(means)
	p50 := means[len(means)/2]
	fmt.Printf("   passes after a Pod event, mean per event over %d events: min %v, p50 %v, max %v\n",
		len(means), means[0].Round(time.Millisecond), p50.Round(time.Millisecond), means[len(means)-1].Round(time.Millisecond))
	r.check("1,000 apps: one app's pass after a Pod event", p50.Round(time.Millisecond).String()+" p50", "<= 100ms p50", p50 <= 100*time.Millisecond)
	return nil
}

// scaleMetrics reads serve's /metrics.
type scaleMetrics struct{ addr string }

var (
	verifiedLine = regexp.MustCompile(`(?m)^pinbot_app_verified\{app="[^"]+"\} 1$`)
)

func (m *scaleMetrics) text() (string, error) {
	resp, err := http.Get("http://" + m.addr + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// verified counts the apps verified.
func (m *scaleMetrics) verified() int {
	t, err := m.text()
	if err != nil {
		return 0
	}
	return len(verifiedLine.FindAllString(t, -1))
}

// passes is app's pass histogram: the seconds summed and the count.
func (m *scaleMetrics) passes(app string) (float64, int, error) {
	t, err := m.text()
	if err != nil {
		return 0, 0, err
	}
	read := func(suffix string) (float64, error) {
		re := regexp.MustCompile(`(?m)^pinbot_reconcile_duration_seconds_` + suffix + `\{app="` + regexp.QuoteMeta(app) + `"\} (\S+)$`)
		f := re.FindStringSubmatch(t)
		if f == nil {
			return 0, nil
		}
		return strconv.ParseFloat(f[1], 64)
	}
	sum, err := read("sum")
	if err != nil {
		return 0, 0, err
	}
	n, err := read("count")
	return sum, int(n), err
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// tailFile is the last n lines of the file at path.
func tailFile(path string, n int) string {
	lines := strings.Split(strings.TrimRight(readFile(path), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "\n" + strings.Join(lines, "\n")
}

// saveHeap writes the heap profile serve's --pprof-listen serves to
// path, for `go tool pprof`.
func saveHeap(addr, path string) error {
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	fmt.Printf("   heap profile: %s (go tool pprof -sample_index=inuse_space %s)\n", path, path)
	return f.Close()
}

// goMemory is what the Go runtime of the serve at addr says of its
// memory, from its metrics: the heap in use, the stacks, the next GC's
// goal, what it holds unused and has not returned, and the goroutines.
func goMemory(addr string) string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error()
	}
	m := map[string]float64{}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && strings.HasPrefix(f[0], "go_") {
			m[f[0]], _ = strconv.ParseFloat(f[1], 64)
		}
	}
	return fmt.Sprintf("heap in use %s, stacks %s, next GC at %s, idle not returned %s, %.0f goroutines",
		mb(int64(m["go_memstats_heap_inuse_bytes"])), mb(int64(m["go_memstats_stack_inuse_bytes"])),
		mb(int64(m["go_memstats_next_gc_bytes"])), mb(int64(m["go_memstats_heap_idle_bytes"]-m["go_memstats_heap_released_bytes"])),
		m["go_goroutines"])
}
