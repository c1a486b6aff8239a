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
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/testenv/filetree"
	"pinbot.dev/pinbot/internal/testenv/stack"
	"pinbot.dev/pinbot/reconciler/history"
)

// pushHook sends serve at addr Gitea's push webhook of branch main moved
// to after in the repository at cloneURL, signed with secret, and
// returns the answer's status code.
func pushHook(t *testing.T, addr, secret, after, cloneURL string) int {
	t.Helper()
	body := fmt.Sprintf(`{"ref":"refs/heads/main","after":%q,"repository":{"clone_url":%q}}`, after, cloneURL)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/webhook/gitea", strings.NewReader(body))
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
	const secret = "serve-ha-s3cret"
	var repo, digest string
	manifest := func(replicas int) map[string]string {
		return map[string]string{"app/web.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: %q}]
`, replicas, repo+":v1@"+digest)}
	}
	rig := newServeRig(ctx, t, stack.Options{Namespaces: []string{"pinbot-system", "web"}}, nil, secret)
	g := rig.peers.Gitea
	repo, digest = rig.image("web", "v1")
	first := rig.createRepo("manifests", manifest(1))
	rig.config(fmt.Sprintf("{url: %q}", g.URL), "")
	writeApp := func(replicas int) string { return filetree.Write(t, manifest(replicas)) }
	start := func(id string) *replica { return rig.serve(id, "--shutdown-timeout", "10s", "-v") }
	holder, entries := rig.holder, rig.entries
	synced := func(commit string) int {
		n := 0
		for _, e := range entries() {
			if e.Commit == commit && e.Trigger != history.TriggerHeal {
				n++
			}
		}
		return n
	}
	waitFor := rig.waitFor
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
	waitFor(60*time.Second, "a leader elected", func() bool { return byID[holder()] != nil })
	leader := byID[holder()]
	follower := a
	if leader == a {
		follower = b
	}
	waitFor(60*time.Second, "the first commit synced", func() bool { return synced(first) == 1 })
	waitFor(30*time.Second, "both replicas ready", func() bool { return ready(a) && ready(b) })
	// The follower runs no passes, yet exports every app's state: the
	// status the leader stored.
	waitFor(60*time.Second, "the follower's /metrics shows app web", func() bool {
		resp, err := http.Get("http://" + follower.addr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		m, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(m), `pinbot_app_synced{app="web"} 1`) &&
			strings.Contains(string(m), `pinbot_app_verification{app="web",state="Verified"} 1`) &&
			strings.Contains(string(m), "pinbot_leader 0")
	})
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
	waitFor(30*time.Second, "the leader's dashboard shows the running Pod's digest", func() bool {
		resp, err := http.Get("http://" + leader.addr + "/apps/web")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		page, _ := io.ReadAll(resp.Body)
		short := digest[:len("sha256:")+12]
		return strings.Contains(string(page), `<code class="git">`+short+`</code>`) &&
			strings.Contains(string(page), `<code class="running">`+short+`</code>`)
	})

	// So does the follower's, from the proof the leader stored; and
	// `pinbot status --server` reads it through the follower's JSON API.
	waitFor(60*time.Second, "the follower's dashboard shows the running Pod's digest", func() bool {
		resp, err := http.Get("http://" + follower.addr + "/apps/web")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		page, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(page), `<code class="running">`+digest[:len("sha256:")+12]+`</code>`)
	})
	code, out, errOut := run(t, "status", "web", "--server", "http://"+follower.addr, "-o", "json")
	var st struct {
		Proof      string `json:"proof"`
		Containers []struct {
			RunningDigest string `json:"runningDigest"`
		} `json:"containers"`
	}
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || st.Proof != "Verified" || len(st.Containers) != 1 ||
		!strings.HasSuffix(st.Containers[0].RunningDigest, digest) {
		t.Errorf("status web --server (the follower): exit %d, %v, %+v\n%s%s", code, err, st, out, errOut)
	}

	// A push, announced to the follower only: the leader syncs it.
	second, err := g.PushDir(ctx, g.AdminUser, "manifests", "main", writeApp(2), "Two replicas")
	if err != nil {
		t.Fatal(err)
	}
	hook := func(r *replica, after string) int {
		t.Helper()
		return pushHook(t, r.addr, secret, after, g.RepoURL(g.AdminUser, "manifests"))
	}
	if code := hook(follower, second); code != http.StatusAccepted {
		t.Fatalf("webhook to the follower: %d, want 202", code)
	}
	// The bench measures how soon (serve: webhook to the follower); here a
	// loaded machine gets a generous deadline.
	took := waitFor(30*time.Second, "the webhook to the follower syncs", func() bool { return synced(second) == 1 })
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
	took = waitFor(30*time.Second, "the follower leads after SIGTERM", func() bool { return holder() == follower.id })
	t.Logf("failover after SIGTERM: %s", took)

	// SIGKILL of the new leader: the restarted replica leads once the
	// lease expires.
	again := start(leader.id)
	waitFor(30*time.Second, "the restarted replica ready", func() bool { return ready(again) })
	if err := follower.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-follower.done
	took = waitFor(60*time.Second, "the restarted replica leads after SIGKILL", func() bool { return holder() == again.id })
	t.Logf("failover after SIGKILL: %s", took)
	third, err := g.PushDir(ctx, g.AdminUser, "manifests", "main", writeApp(3), "Three replicas")
	if err != nil {
		t.Fatal(err)
	}
	if code := hook(again, third); code != http.StatusAccepted {
		t.Fatalf("webhook to the new leader: %d, want 202", code)
	}
	waitFor(30*time.Second, "the new leader syncs", func() bool { return synced(third) == 1 })
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
	start := func(id string) *replica { return rig.serve(id, "--shutdown-timeout", "20s") }
	holder := rig.holder
	waitFor := rig.waitFor
	a := start("mid-a")
	waitFor(60*time.Second, "mid-a leads", func() bool { return holder() == "mid-a" })
	b := start("mid-b")
	waitFor(60*time.Second, "the Job applied", func() bool {
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
	es := rig.entries()
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
	waitFor(30*time.Second, "mid-b leads after the release", func() bool { return holder() == "mid-b" })
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
	rig := newServeRig(ctx, t, stack.Options{Namespaces: []string{"web"}},
		map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {k: v}\n"}, "s3cret")
	g, c, kube := rig.peers.Gitea, rig.peers.Cluster, rig.peers.Kube
	rig.config(fmt.Sprintf("{url: %q}", g.URL), "")
	cfg, secretFile := rig.cfg, rig.secret
	cmd := exec.Command(pinbotBin, "serve", "--config", cfg, "--kubeconfig", c.Kubeconfig, "--cache-dir", t.TempDir(),
		"--listen", freeAddr(t), "--webhook-secret-file", secretFile, "--leader-elect", "--id", "a")
	cmd.Env = append(os.Environ(), "PINBOT_GITEA_TOKEN="+g.Token)
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("serve: %v, want exit 1; output:\n%s", err, out)
	}
	for _, want := range []string{`"pinbot-system" does not exist`, "kubectl apply -k deploy/overlays/example"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	if _, err := kube.CoreV1().ConfigMaps("web").Get(ctx, "settings", metav1.GetOptions{}); err == nil {
		t.Error("serve applied the app before stopping on the missing state namespace")
	}
}
