package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"pinbot.dev/pinbot/reconciler/status"
)

const fleetSecret = "bench-fleet-secret"

// measure starts the replicas and takes the figures: start to every app
// verified, idle memory and API requests per replica, merges, and a
// replica's SIGKILL.
func (b *fleetBench) measure(ctx context.Context, r *report) error {
	var err error
	if b.statuses, err = watchFleetStatuses(ctx, b.kube); err != nil {
		return err
	}
	at := fmt.Sprintf("%s apps, %d clusters, %d replicas: ", thousands(b.shape.apps), b.shape.clusters, b.shape.replicas)
	cpu := readCPU()
	if err := b.startReplicas(); err != nil {
		return err
	}
	defer func() {
		for _, c := range b.replicas {
			c.stop()
			keepLog(c.log, b.shape.name+"-"+c.name+".log")
		}
	}()
	// Where the start's time goes once the passes run (from 30 s in),
	// and what the first replica's passes wait on, 45 s in.
	time.AfterFunc(30*time.Second, func() {
		go saveProfile(b.pprof, "profile?seconds=30", filepath.Join("hack", "bench", "out", b.shape.name+"-start-cpu.pprof"))
		go saveAPIServerProfile(ctx, b.kube, 30, filepath.Join("hack", "bench", "out", b.shape.name+"-start-hub-apiserver-cpu.pprof"))
	})
	time.AfterFunc(45*time.Second, func() {
		saveProfile(b.pprof, "goroutine?debug=1", filepath.Join("hack", "bench", "out", b.shape.name+"-start-goroutines.txt"))
	})
	var verified int
	took, err := benchPoll(ctx, b.shape.patience(20*time.Minute), "every app verified", func() bool {
		for _, c := range b.replicas {
			select {
			case <-c.exited:
				return true // said below
			default:
			}
		}
		verified = b.statuses.verified(func(fleetStatus) bool { return true })
		if verified < b.shape.apps {
			time.Sleep(250 * time.Millisecond)
		}
		return verified == b.shape.apps
	})
	if err == nil && verified < b.shape.apps {
		err = fmt.Errorf("a replica exited")
	}
	if err != nil {
		for _, c := range b.replicas {
			fmt.Printf("   %s's log: %s\n", c.name, tailFile(c.log, 10))
		}
		return fmt.Errorf("%s of %s verified: %w", thousands(verified), thousands(b.shape.apps), err)
	}
	r.check(at+"start to every app verified", recRound(took).String(), "≤ 60s", took <= 60*time.Second)
	fmt.Printf("   the machine during the start: %s (bench: the simulated kubelets and the request counter)\n", readCPU().since(cpu))
	var asked []apiRequest
	for _, c := range b.counters {
		for _, q := range c.snapshot() {
			if q.at.After(cpu.at) {
				asked = append(asked, q)
			}
		}
	}
	fmt.Printf("   the replicas' requests during the start: %s\n", recSummary(asked))
	for _, l := range recBreakdown(asked)[:min(10, len(recBreakdown(asked)))] {
		fmt.Printf("     %s\n", l)
	}
	b.printThrottled("during the start")
	if n, err := b.rolledAtStart(ctx); err == nil {
		r.check(at+"pinbot's own apps whose Deployment serve's start changed", fmt.Sprint(n), "0", n == 0)
	}
	fmt.Printf("   apps per replica: %s\n", b.statuses.perReplica())

	if err := recSleep(ctx, scaleSettle, b.replicas...); err != nil {
		return err
	}
	worst, _, err := b.idleRSS()
	if err != nil {
		return err
	}
	b.idleWorst = worst
	r.check(at+"idle RSS, the largest replica, --memory-limit "+mb(b.memoryLimit()), mb(worst), "≤ 250 MB", worst <= 250<<20)
	if err := saveHeap(b.pprof, filepath.Join("hack", "bench", "out", b.shape.name+"-heap.pprof")); err != nil {
		fmt.Printf("   no heap profile: %s\n", err)
	}

	if err := b.idleMinute(ctx, r, at); err != nil {
		return err
	}
	if err := b.merges(ctx, r, at); err != nil {
		return err
	}
	if err := b.failover(ctx, r, at); err != nil {
		return err
	}
	// The restart counts every app verified: before the hostile minute
	// leaves some unproven for good.
	if err := b.restart(ctx, r, at); err != nil {
		return err
	}
	if err := b.hostile(ctx, r, at); err != nil {
		return err
	}
	return b.scaleOut(ctx, r)
}

// idleRSS prints each replica's memory and returns the largest RSS.
func (b *fleetBench) idleRSS() (worst int64, largest int, err error) {
	for i, c := range b.replicas {
		rss, peak, file, err := procMemoryDetail(c.cmd.Process.Pid)
		if err != nil {
			return 0, 0, err
		}
		if rss > worst {
			worst, largest = rss, i
		}
		fmt.Printf("   %s: RSS %s (peak %s, the executable's pages %s); %s\n", c.name, mb(rss), mb(peak), mb(file), goMemory(b.addrs[i]))
	}
	return worst, largest, nil
}

// startReplicas starts the serve replicas, each with its own cache and
// listener, all reaching the hub through its counting proxy.
func (b *fleetBench) startReplicas() error {
	kubeconfig, err := b.proxyKubeconfig(b.proxies[0])
	if err != nil {
		return err
	}
	cfg := filepath.Join(b.tmp, "fleet.yaml")
	if err := os.WriteFile(cfg, []byte(b.config()), 0o600); err != nil {
		return err
	}
	secret := filepath.Join(b.tmp, "webhook-secret")
	if err := os.WriteFile(secret, []byte(fleetSecret+"\n"), 0o600); err != nil {
		return err
	}
	for k := range b.shape.replicas {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		id := fmt.Sprintf("fleet-r%d", k)
		args := []string{"serve", "--config", cfg, "--kubeconfig", kubeconfig,
			"--cache-dir", filepath.Join(b.tmp, "cache-"+id), "--listen", addr, "--webhook-secret-file", secret,
			"--leader-elect", "--id", id, "--shards", fmt.Sprint(b.shape.shards),
			"--lease-duration", fleetLease, "--renew-deadline", fleetRenew, "--retry-period", fleetRetry,
			"--memory-limit", fmt.Sprint(b.memoryLimit())}
		pp, err := freeAddr()
		if err != nil {
			return err
		}
		args = append(args, "--pprof-listen", pp)
		b.pprofs = append(b.pprofs, pp)
		if k == 0 {
			b.pprof = pp
		}
		c, err := b.startChild(id, filepath.Join(b.tmp, "serve-"+id+".log"), args...)
		if err != nil {
			return err
		}
		b.replicas, b.addrs = append(b.replicas, c), append(b.addrs, addr)
	}
	return nil
}

// saveProfile saves the profile at /debug/pprof/<what> of addr to path.
func saveProfile(addr, what, path string) {
	time.Sleep(time.Second) // the listener is up
	resp, err := http.Get("http://" + addr + "/debug/pprof/" + what)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode == http.StatusOK && os.MkdirAll(filepath.Dir(path), 0o755) == nil {
		_ = os.WriteFile(path, b, 0o644)
	}
}

// keepLog copies a replica's log to hack/bench/out/name, which outlives
// the run's directory.
func keepLog(path, name string) {
	b, err := os.ReadFile(path)
	if err == nil && os.MkdirAll(filepath.Join("hack", "bench", "out"), 0o755) == nil {
		_ = os.WriteFile(filepath.Join("hack", "bench", "out", name), b, 0o644)
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// idleMinute counts each replica's API requests, on every cluster, over
// an idle minute.
func (b *fleetBench) idleMinute(ctx context.Context, r *report, at string) error {
	begin := time.Now()
	if err := recSleep(ctx, scaleWindow, b.replicas...); err != nil {
		return err
	}
	per := map[string][]apiRequest{}
	for _, c := range b.counters {
		for _, q := range c.snapshot() {
			if q.at.After(begin) {
				per[q.replica] = append(per[q.replica], q)
			}
		}
	}
	worst, most := "", -1
	for _, c := range b.replicas {
		fmt.Printf("   idle minute, %s: %s\n", c.name, recSummary(per[c.name]))
		if n := len(per[c.name]); n > most {
			worst, most = c.name, n
		}
	}
	for _, l := range recBreakdown(per[worst]) {
		fmt.Printf("     %s: %s\n", worst, l)
	}
	if n := len(per[""]); n > 0 {
		fmt.Printf("   idle minute, unnamed: %s\n", recSummary(per[""]))
	}
	perMin := float64(most) / scaleWindow.Minutes()
	r.check(at+"API requests per idle minute, the busiest replica, every cluster", fmt.Sprintf("%.0f (%s)", perMin, worst), "≤ 60", perMin <= 60)
	return nil
}

// merges pushes fleetMerges commits, each changing the image of one of
// pinbot's own apps, announces each by webhook to the first replica, and
// times the push to the app verified on the new commit, and the part of
// it after the rollout ended (pinbot's own).
func (b *fleetBench) merges(ctx context.Context, r *report, at string) error {
	var totals, overheads []time.Duration
	for m := range fleetMerges {
		i := m * fleetOwnEvery * 7 % b.shape.apps
		name, ns := fleetName(i), b.namespace(i)
		sha, err := b.gitea.Commit(ctx, b.owner, fleetOwnRepo, "main", "main",
			map[string]string{"apps/" + name + "/deploy.yaml": scaleDeploymentYAML(name, b.images[1])}, "fleet: "+name+" to v1")
		if err != nil {
			return err
		}
		sent := time.Now()
		if err := b.announce(ctx, sha); err != nil {
			return err
		}
		digest := b.images[1][strings.LastIndex(b.images[1], "@")+1:]
		var rolled time.Time
		took, err := benchPoll(ctx, 2*time.Minute, name+" verified on "+sha[:8], func() bool {
			if rolled.IsZero() && b.rolledOut(ctx, ns, name, digest) {
				rolled = time.Now()
			}
			s, ok := b.statuses.get(name)
			return ok && s.SyncedCommit == sha && s.Verified
		})
		if err != nil {
			return err
		}
		if rolled.IsZero() {
			rolled = time.Now()
		}
		totals = append(totals, took)
		overheads = append(overheads, max(0, sent.Add(took).Sub(rolled)))
	}
	fmt.Printf("   merge → verified: %s; after the rollout ended: %s\n", recDurations(totals), recDurations(overheads))
	r.info(at+"a merge of one app → verified, p50", recRound(recMedian(totals)).String())
	p50 := recMedian(overheads)
	r.check(at+"a merge of one app: verified after its rollout, p50", recRound(p50).String(), "≤ 1s", p50 <= time.Second)
	return nil
}

// rolledAtStart counts pinbot's own apps whose Deployment is past its
// first generation: serve's start applied a change to them.
func (b *fleetBench) rolledAtStart(ctx context.Context) (int, error) {
	list, err := b.kube.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: "pinbot.dev/app", ResourceVersion: "0"})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range list.Items {
		if d.Generation > 1 {
			n++
		}
	}
	return n, nil
}

// announce sends Gitea's push webhook of sha to the first replica.
func (b *fleetBench) announce(ctx context.Context, sha string) error {
	return postPush(ctx, b.addrs[0], fleetSecret, sha, b.gitea.RepoURL(b.owner, fleetOwnRepo))
}

// postPush sends serve at addr Gitea's push webhook of sha to main of the
// repository at cloneURL, signed with secret, and wants it accepted.
func postPush(ctx context.Context, addr, secret, sha, cloneURL string) error {
	body := fmt.Sprintf(`{"ref":"refs/heads/main","after":%q,"repository":{"clone_url":%q}}`, sha, cloneURL)
	code, err := sendHook(ctx, addr, secret, "", body)
	if err == nil && code != http.StatusAccepted {
		err = fmt.Errorf("the webhook: %d", code)
	}
	return err
}

// sendHook posts body to serve at addr as Gitea's push webhook, signed
// with secret (and with delivery as its id, when set), and returns the
// status code.
func sendHook(ctx context.Context, addr, secret, delivery, body string) (int, error) {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/webhook/gitea", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Gitea-Event", "push")
	req.Header.Set("X-Gitea-Signature", hex.EncodeToString(mac.Sum(nil)))
	if delivery != "" {
		req.Header.Set("X-Gitea-Delivery", delivery)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// rolledOut reports whether app's Pods on the hub are fleetAppPods, all
// running digest.
func (b *fleetBench) rolledOut(ctx context.Context, ns, app, digest string) bool {
	pods, err := b.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app, ResourceVersion: "0"})
	if err != nil || len(pods.Items) != fleetAppPods {
		return false
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != 1 || !strings.HasSuffix(p.Status.ContainerStatuses[0].ImageID, digest) {
			return false
		}
	}
	return true
}

func examples(apps []string) string {
	if len(apps) == 0 {
		return ""
	}
	return " (" + strings.Join(apps[:min(5, len(apps))], ", ") + ")"
}

// fleetStatus is an app's stored status, as the bench last saw it.
type fleetStatus struct {
	status.App
	seen time.Time
}

// fleetStatuses are the apps' statuses serve stores in the state
// namespace, watched.
type fleetStatuses struct {
	mu   sync.Mutex
	apps map[string]fleetStatus
}

func watchFleetStatuses(ctx context.Context, k kubernetes.Interface) (*fleetStatuses, error) {
	s := &fleetStatuses{apps: map[string]fleetStatus{}}
	f := informers.NewSharedInformerFactoryWithOptions(k, 0, informers.WithNamespace("pinbot-system"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app.kubernetes.io/managed-by=pinbot" }))
	inf := f.Core().V1().ConfigMaps().Informer()
	take := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok || cm.Data["status.json"] == "" {
			return
		}
		var a status.App
		if json.Unmarshal([]byte(cm.Data["status.json"]), &a) != nil {
			return
		}
		s.mu.Lock()
		s.apps[a.App] = fleetStatus{App: a, seen: time.Now()}
		s.mu.Unlock()
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: take, UpdateFunc: func(_, o any) { take(o) }}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("watching the statuses: %w", context.Cause(ctx))
	}
	return s, nil
}

func (s *fleetStatuses) get(app string) (fleetStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.apps[app]
	return a, ok
}

// verified counts the verified apps that also pass cond.
func (s *fleetStatuses) verified(cond func(fleetStatus) bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, a := range s.apps {
		if a.Verified && cond(a) {
			n++
		}
	}
	return n
}

// of lists the apps replica passed last.
func (s *fleetStatuses) of(replica string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for app, a := range s.apps {
		if a.Replica == replica {
			out = append(out, app)
		}
	}
	return out
}

// perReplica says how many apps each replica passed last.
func (s *fleetStatuses) perReplica() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := map[string]int{}
	for _, a := range s.apps {
		n[a.Replica]++
	}
	var out []string
	for id, c := range n {
		out = append(out, fmt.Sprintf("%s %d", id, c))
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// saveAPIServerProfile saves a CPU profile of kube's API server over
// seconds to path: where the API server's time goes while the replicas
// start (its /debug/pprof, which the bench's control plane serves with
// --profiling=true, recBench.start).
func saveAPIServerProfile(ctx context.Context, kube kubernetes.Interface, seconds int, path string) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds+30)*time.Second)
	defer cancel()
	b, err := kube.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(seconds)).DoRaw(ctx)
	if err == nil && os.MkdirAll(filepath.Dir(path), 0o755) == nil {
		_ = os.WriteFile(path, b, 0o644)
	}
}
