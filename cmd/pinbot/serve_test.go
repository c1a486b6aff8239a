package main

import (
	"bytes"
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
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/testenv/stack"
	"pinbot.dev/pinbot/reconciler/history"
)

// replica is one `pinbot serve --leader-elect` child process.
type replica struct {
	id   string
	addr string
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan error
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServeHighlyAvailable runs two replicas of the real binary against a
// real control plane and Gitea: one leader is elected, a webhook sent to
// the follower syncs within 2 s, SIGTERM of the leader exits 0 and hands
// over within the lease timings, SIGKILL hands over after the lease
// expires, and no commit is synced twice.
func TestServeHighlyAvailable(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs bin/ peers (make tools)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	peers, err := stack.Start(ctx, stack.Options{Namespaces: []string{"pinbot-system", "web"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(peers.Stop)
	g, c, kube := peers.Gitea, peers.Cluster, peers.Kube
	dockerDir, err := g.DockerConfig()
	if err != nil {
		t.Fatal(err)
	}
	repo := g.RegistryHost + "/" + g.AdminUser + "/web"
	digest, err := g.PushRandomImage(repo + ":v1")
	if err != nil {
		t.Fatal(err)
	}
	manifest := func(replicas int) string {
		return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: %q}]
`, replicas, repo+":v1@"+digest)
	}
	writeApp := func(replicas int) string {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "app"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "app", "web.yaml"), []byte(manifest(replicas)), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	first, err := g.CreateRepoFromDir(ctx, g.AdminUser, "manifests", "main", writeApp(1))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "pinbot.yaml")
	config := fmt.Sprintf(`interval: 10m
forge: {url: %q}
apps:
  - name: web
    repo: %s
    branch: main
    path: app
    namespace: web
    allowNamespaces: [web]
    syncPolicy: {automated: true}
`, g.URL, g.RepoURL(g.AdminUser, "manifests"))
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	const secret = "serve-ha-s3cret"
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	start := func(id string) *replica {
		t.Helper()
		r := &replica{id: id, addr: freeAddr(t), log: &bytes.Buffer{}, done: make(chan error, 1)}
		r.cmd = exec.Command(pinbotBin, "serve", "--config", cfg, "--kubeconfig", c.Kubeconfig,
			"--cache-dir", t.TempDir(), "--listen", r.addr, "--webhook-secret-file", secretFile,
			"--leader-elect", "--id", id, "--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "1s",
			"--shutdown-timeout", "10s", "-v")
		r.cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+dockerDir, "PINBOT_GITEA_TOKEN="+g.Token)
		r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { r.done <- r.cmd.Wait() }()
		t.Cleanup(func() {
			if r.cmd.ProcessState == nil {
				_ = r.cmd.Process.Kill()
				<-r.done
			}
			if t.Failed() {
				t.Logf("log of %s:\n%s", id, r.log.String())
			}
		})
		return r
	}
	holder := func() string {
		l, err := kube.CoordinationV1().Leases("pinbot-system").Get(ctx, "pinbot", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	entries := func() []history.Entry {
		cm, err := kube.CoreV1().ConfigMaps("pinbot-system").Get(ctx, "pinbot-app-web", metav1.GetOptions{})
		if err != nil {
			return nil
		}
		var es []history.Entry
		_ = json.Unmarshal([]byte(cm.Data["history.json"]), &es)
		return es
	}
	synced := func(commit string) int {
		n := 0
		for _, e := range entries() {
			if e.Commit == commit && e.Trigger != history.TriggerHeal {
				n++
			}
		}
		return n
	}
	poll := func(timeout time.Duration, what string, cond func() bool) time.Duration {
		t.Helper()
		begin := time.Now()
		for deadline := begin.Add(timeout); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s (lease holder %q, history %+v)", what, timeout, holder(), entries())
			}
		}
		return time.Since(begin)
	}
	ready := func(r *replica) bool {
		resp, err := http.Get("http://" + r.addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}

	a, b := start("replica-a"), start("replica-b")
	byID := map[string]*replica{a.id: a, b.id: b}
	poll(60*time.Second, "a leader elected", func() bool { return byID[holder()] != nil })
	leader := byID[holder()]
	follower := a
	if leader == a {
		follower = b
	}
	poll(60*time.Second, "the first commit synced", func() bool { return synced(first) == 1 })
	poll(30*time.Second, "both replicas ready", func() bool { return ready(a) && ready(b) })
	for _, r := range []*replica{a, b} {
		resp, err := http.Get("http://" + r.addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("dashboard of %s: %s", r.id, resp.Status)
		}
	}

	// The leader's dashboard shows, next to the digest Git pins, the one
	// its Pod runs.
	poll(30*time.Second, "the leader's dashboard shows the running Pod's digest", func() bool {
		resp, err := http.Get("http://" + leader.addr + "/")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		page, _ := io.ReadAll(resp.Body)
		short := digest[:len("sha256:")+12]
		return strings.Contains(string(page), `<code class="git">`+short+`</code>`) &&
			strings.Contains(string(page), `<code class="running">`+short+`</code>`)
	})

	// A push, announced to the follower only: the leader syncs it.
	second, err := g.PushDir(ctx, g.AdminUser, "manifests", "main", writeApp(2), "Two replicas")
	if err != nil {
		t.Fatal(err)
	}
	hook := func(r *replica, after string) int {
		t.Helper()
		body := fmt.Sprintf(`{"ref":"refs/heads/main","after":%q,"repository":{"clone_url":%q}}`, after, g.RepoURL(g.AdminUser, "manifests"))
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(body))
		req, err := http.NewRequest(http.MethodPost, "http://"+r.addr+"/webhook/gitea", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Gitea-Event", "push")
		req.Header.Set("X-Gitea-Signature", hex.EncodeToString(mac.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := hook(follower, second); code != http.StatusAccepted {
		t.Fatalf("webhook to the follower: %d, want 202", code)
	}
	took := poll(2*time.Second, "the webhook to the follower syncs", func() bool { return synced(second) == 1 })
	t.Logf("webhook to the follower: synced after %s", took)

	// SIGTERM of the leader: exit 0, the Lease released, the follower
	// leads within the lease timings.
	if err := leader.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-leader.done:
		if err != nil {
			t.Fatalf("leader after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("leader did not exit within 30s of SIGTERM")
	}
	took = poll(6*time.Second, "the follower leads after SIGTERM", func() bool { return holder() == follower.id })
	t.Logf("failover after SIGTERM: %s", took)

	// SIGKILL of the new leader: the restarted replica leads once the
	// lease expires.
	again := start(leader.id)
	poll(30*time.Second, "the restarted replica ready", func() bool { return ready(again) })
	if err := follower.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-follower.done
	took = poll(15*time.Second, "the restarted replica leads after SIGKILL", func() bool { return holder() == again.id })
	t.Logf("failover after SIGKILL: %s", took)
	third, err := g.PushDir(ctx, g.AdminUser, "manifests", "main", writeApp(3), "Three replicas")
	if err != nil {
		t.Fatal(err)
	}
	if code := hook(again, third); code != http.StatusAccepted {
		t.Fatalf("webhook to the new leader: %d, want 202", code)
	}
	poll(10*time.Second, "the new leader syncs", func() bool { return synced(third) == 1 })
	for _, commit := range []string{first, second, third} {
		if n := synced(commit); n != 1 {
			t.Errorf("commit %s synced %d times, want once", commit[:8], n)
		}
	}
}

// TestServeSIGTERMMidSync sends SIGTERM to the leader while a sync waits
// for its first wave (a Job that runs 5 s): the leader finishes the sync
// (the second wave is applied), records it once, exits 0 and releases the
// Lease to the follower.
func TestServeSIGTERMMidSync(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs bin/ peers (make tools)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rig := newWaveRig(ctx, t, 5*time.Second)
	kube, commit := rig.peers.Kube, rig.commit
	start := func(id string) *waveReplica { return rig.serve(t, id, "20s") }
	holder := func() string {
		l, err := kube.CoordinationV1().Leases("pinbot-system").Get(ctx, "pinbot", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	poll := func(timeout time.Duration, what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(timeout); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s (lease holder %q)", what, timeout, holder())
			}
		}
	}
	a := start("mid-a")
	poll(60*time.Second, "mid-a leads", func() bool { return holder() == "mid-a" })
	b := start("mid-b")
	poll(60*time.Second, "the Job applied", func() bool {
		_, err := kube.BatchV1().Jobs("web").Get(ctx, "migrate", metav1.GetOptions{})
		return err == nil
	})
	if _, err := kube.CoreV1().ConfigMaps("web").Get(ctx, "late", metav1.GetOptions{}); err == nil {
		t.Fatal("the second wave was applied before the Job completed")
	}
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-a.done:
		if err != nil {
			t.Fatalf("leader after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("leader did not exit within 40s of SIGTERM")
	}
	if _, err := kube.CoreV1().ConfigMaps("web").Get(ctx, "late", metav1.GetOptions{}); err != nil {
		t.Errorf("the sync in flight was not finished: the second wave is missing: %v", err)
	}
	cm, err := kube.CoreV1().ConfigMaps("pinbot-system").Get(ctx, "pinbot-app-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var es []history.Entry
	if err := json.Unmarshal([]byte(cm.Data["history.json"]), &es); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.Commit == commit {
			n++
			if e.Result != history.Applied {
				t.Errorf("the sync of %s: result %s (%s), want %s", commit[:8], e.Result, e.Reason, history.Applied)
			}
		}
	}
	if n != 1 {
		t.Errorf("the history holds %d syncs of %s, want 1: %+v", n, commit[:8], es)
	}
	poll(6*time.Second, "mid-b leads after the release", func() bool { return holder() == "mid-b" })
	_ = b
}

// TestServeWithoutStateNamespace: serve stops first, naming the fix, when
// the state namespace is missing; nothing is applied and no Lease taken.
func TestServeWithoutStateNamespace(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs bin/ peers (make tools)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	peers, err := stack.Start(ctx, stack.Options{Namespaces: []string{"web"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(peers.Stop)
	g, c, kube := peers.Gitea, peers.Cluster, peers.Kube
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "app", "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {k: v}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := g.CreateRepoFromDir(ctx, g.AdminUser, "manifests", "main", src); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "pinbot.yaml")
	config := fmt.Sprintf("forge: {url: %q}\napps:\n  - {name: web, repo: %s, branch: main, path: app, namespace: web, allowNamespaces: [web], syncPolicy: {automated: true}}\n",
		g.URL, g.RepoURL(g.AdminUser, "manifests"))
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(pinbotBin, "serve", "--config", cfg, "--kubeconfig", c.Kubeconfig, "--cache-dir", t.TempDir(),
		"--listen", freeAddr(t), "--webhook-secret-file", secretFile, "--leader-elect", "--id", "a")
	cmd.Env = append(os.Environ(), "PINBOT_GITEA_TOKEN="+g.Token)
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("serve: %v, want exit 1; output:\n%s", err, out)
	}
	for _, want := range []string{`"pinbot-system" does not exist`, "kubectl apply -k deploy/"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	if _, err := kube.CoreV1().ConfigMaps("web").Get(ctx, "settings", metav1.GetOptions{}); err == nil {
		t.Error("serve applied the app before stopping on the missing state namespace")
	}
}
