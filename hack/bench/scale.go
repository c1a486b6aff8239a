package main

import (
	"context"
	"encoding/json"
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
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
)

func init() { register("scale", benchScale) }

// The scale measurements (issue 22): one `pinbot serve` verifying 1,000
// Argo CD Applications it discovers by label, half on the hub and half on
// a spoke (a second control plane with its own node), 3 Pods each.
const (
	scaleApps       = 1000
	scaleReplicas   = 3
	scaleNamespaces = 20 // per cluster
	scaleEvents     = 20 // Pod events timed
	scaleSettle     = 30 * time.Second
	scaleWindow     = 60 * time.Second
)

var applicationsGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// scaleBench is the two clusters of the scale measurements.
type scaleBench struct {
	*recBench
	spoke     *kube.Cluster
	spokeKube kubernetes.Interface
	image     string // repo@digest every Pod runs
	commit    string
}

// benchScale measures, on the hub and a spoke with 3,000 Pods between
// them: the time from serve's start to all 1,000 apps verified, its idle
// RSS, its API requests per idle minute on both clusters, and its passes
// after a Pod event.
func benchScale(ctx context.Context, r *report) error {
	tmp, err := os.MkdirTemp("", "pinbot-bench-scale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b := &scaleBench{recBench: &recBench{tmp: tmp, bin: filepath.Join(tmp, "pinbot")}}
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)

	started := time.Now()
	built := make(chan error, 1)
	go func() { built <- buildPinbot(ctx, b.bin) }()
	stop, err := b.start(ctx)
	defer stop()
	if err = errors.Join(err, <-built); err != nil {
		return err
	}
	stopSpoke, err := b.startSpoke(ctx)
	defer stopSpoke()
	if err != nil {
		return err
	}
	if err := b.populate(ctx); err != nil {
		return err
	}
	fmt.Printf("   hub and spoke, %d Deployments and %d Pods running, in %v\n",
		scaleApps, scaleApps*scaleReplicas, time.Since(started).Round(time.Second))
	return b.measure(ctx, r)
}

// startSpoke starts the spoke's control plane and node, which pulls from
// the hub's Gitea registry.
func (b *scaleBench) startSpoke(ctx context.Context) (func(), error) {
	sp, err := kube.Start(ctx, kube.Options{})
	if err != nil {
		return func() {}, fmt.Errorf("starting the spoke: %w", err)
	}
	node := kubeletsim.New(sp.Config(), kubeletsim.WithNodeName("spoke-node"), kubeletsim.WithPullBackoff(time.Second),
		kubeletsim.WithBasicAuth(b.gitea.RegistryHost, b.gitea.AdminUser, b.gitea.Token))
	stop := func() {
		node.Stop()
		_ = sp.Stop()
	}
	if err := node.Start(ctx); err != nil {
		return stop, fmt.Errorf("starting the spoke's node: %w", err)
	}
	b.spoke = sp
	b.spokeKube, err = kubernetes.NewForConfig(sp.Config())
	return stop, err
}

// appName is app i's name: its Application, its directory and its
// Deployment. Even apps run on the hub, odd ones on the spoke.
func appName(i int) string { return fmt.Sprintf("a%04d", i) }

func appNamespace(i int) string { return fmt.Sprintf("team-%02d", (i/2)%scaleNamespaces) }

// populate pushes the image and the manifests (one directory per app),
// creates the namespaces, the Deployments as Argo CD would have applied
// them, the spoke's cluster Secret and the Applications, synced, and
// waits until every Pod runs.
func (b *scaleBench) populate(ctx context.Context) error {
	refs, err := b.pushImages("scale", 1)
	if err != nil {
		return err
	}
	tagged, digest, _ := strings.Cut(refs[0], "@")
	b.image = tagged[:strings.LastIndex(tagged, ":")] + "@" + digest
	dir := filepath.Join(b.tmp, "manifests")
	for i := range scaleApps {
		d := filepath.Join(dir, "apps", appName(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(d, "deploy.yaml"), []byte(scaleDeploymentYAML(appName(i), b.image)), 0o644); err != nil {
			return err
		}
	}
	if b.commit, err = b.gitea.CreateRepoFromDir(ctx, b.owner, "scale", "main", dir); err != nil {
		return err
	}
	clusters := []kubernetes.Interface{b.kube, b.spokeKube}
	for _, k := range clusters {
		for n := range scaleNamespaces {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("team-%02d", n)}}
			if _, err := k.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
	}
	if _, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	crd, err := kube.CRDFile(kube.ApplicationCRD)
	if err != nil {
		return err
	}
	if err := b.cluster.InstallCRDs(ctx, crd); err != nil {
		return err
	}
	if err := parallel(ctx, scaleApps, 8, func(i int) error {
		_, err := clusters[i%2].AppsV1().Deployments(appNamespace(i)).Create(ctx, scaleDeployment(appName(i), b.image), metav1.CreateOptions{FieldManager: "argocd-controller"})
		return err
	}); err != nil {
		return fmt.Errorf("creating the Deployments: %w", err)
	}
	if err := b.clusterSecret(ctx, b.spoke.Config().Host, b.spoke.Config().BearerToken, b.spoke.Config().CAData); err != nil {
		return err
	}
	if err := parallel(ctx, scaleApps, 8, func(i int) error {
		_, err := b.dyn.Resource(applicationsGVR).Namespace("argocd").Create(ctx, b.application(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating the Applications: %w", err)
	}
	_, err = benchPoll(ctx, 15*time.Minute, "every Pod running", func() bool {
		n := 0
		for _, k := range clusters {
			pods, err := k.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false
			}
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].ImageID != "" {
					n++
				}
			}
		}
		if n < scaleApps*scaleReplicas {
			time.Sleep(time.Second)
		}
		return n == scaleApps*scaleReplicas
	})
	return err
}

// clusterSecret writes Argo CD's cluster Secret of the spoke, named
// "spoke", reaching server.
func (b *scaleBench) clusterSecret(ctx context.Context, server, token string, ca []byte) error {
	conf, err := json.Marshal(map[string]any{"bearerToken": token, "tlsClientConfig": map[string]any{"caData": ca}})
	if err != nil {
		return err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-spoke", Namespace: "argocd", Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
		StringData: map[string]string{"name": "spoke", "server": server, "config": string(conf)},
	}
	if _, err := b.kube.CoreV1().Secrets("argocd").Update(ctx, s, metav1.UpdateOptions{}); err == nil {
		return nil
	}
	_, err = b.kube.CoreV1().Secrets("argocd").Create(ctx, s, metav1.CreateOptions{})
	return err
}

// application is app i's Application, labelled for discovery, synced
// at the commit as Argo CD reports it.
func (b *scaleBench) application(i int) *unstructured.Unstructured {
	dest := map[string]any{"server": "https://kubernetes.default.svc", "namespace": appNamespace(i)}
	if i%2 == 1 {
		dest = map[string]any{"name": "spoke", "namespace": appNamespace(i)}
	}
	now := time.Now().UTC().Format(time.RFC3339)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "Application",
		"metadata":   map[string]any{"name": appName(i), "namespace": "argocd", "labels": map[string]any{"bench": "scale"}},
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": b.gitea.RepoURL(b.owner, "scale"), "path": "apps/" + appName(i), "targetRevision": "main"},
			"destination": dest,
		},
		"status": map[string]any{
			"reconciledAt": now,
			"operationState": map[string]any{
				"operation": map[string]any{"sync": map[string]any{"revision": b.commit}},
				"phase":     "Succeeded", "startedAt": now, "finishedAt": now,
				"syncResult": map[string]any{"revision": b.commit},
			},
			"history": []any{map[string]any{"id": int64(0), "revision": b.commit, "deployedAt": now}},
			"health":  map[string]any{"status": "Healthy"},
			"sync":    map[string]any{"status": "Synced", "revision": b.commit},
			"resources": []any{map[string]any{"group": "apps", "version": "v1", "kind": "Deployment",
				"namespace": appNamespace(i), "name": appName(i), "status": "Synced", "health": map[string]any{"status": "Healthy"}}},
		},
	}}
}

func scaleDeploymentYAML(name, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: %[3]d
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      containers:
        - name: app
          image: %[2]s
`, name, image, scaleReplicas)
}

func scaleDeployment(name, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(scaleReplicas)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}
}

// parallel runs do(0..n-1) on workers goroutines; the first error wins.
func parallel(ctx context.Context, n, workers int, do func(i int) error) error {
	next := make(chan int)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(i); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("item %d: %w", i, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(first, ctx.Err())
}

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
		"--cache-dir", filepath.Join(b.tmp, "cache-scale"), "--listen", addr, "--webhook-secret-file", secret, "--pprof-listen", pprofAddr)
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
	rss, peak, err := procMemory(srv.cmd.Process.Pid)
	if err != nil {
		return err
	}
	r.check("1,000 apps: idle RSS of one replica", fmt.Sprintf("%s (peak %s)", mb(rss), mb(peak)), "<= 150 MB", rss <= 150<<20)
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
