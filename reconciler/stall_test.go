package reconciler_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/faultproxy"
	"pinbot.dev/pinbot/internal/testenv/filetree"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/status"
)

// TestStalledAPIServer: a kube-apiserver that accepts connections and
// never answers (a fault proxy in front of the real one) fails the
// reconciler's requests within the bound instead of hanging them.
func TestStalledAPIServer(t *testing.T) {
	needPeers(t)
	rc := rest.CopyConfig(env.cluster.Config())
	u, err := url.Parse(rc.Host)
	if err != nil {
		t.Fatal(err)
	}
	// TLS ends at the proxy, so the stall comes after the handshake: the
	// connection is up and the request sent, and no answer comes.
	certFile, keyFile := env.cluster.ServingPair()
	px := faultproxy.StartTLS(t, u.Host, faultproxy.Stall, certFile, keyFile)
	rc.Host = u.Scheme + "://" + px.Addr()
	cfg := twoApps(t, "stall-api", "")
	const answer = 5 * time.Second
	r, err := reconciler.New(cfg, rc, reconciler.WithRegistry(env.reg), reconciler.WithCacheDir(t.TempDir()), reconciler.WithAPIResponseTimeout(answer))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	bound := 2*answer + time.Minute
	ctx, cancel := context.WithTimeout(testCtx, 3*bound) // far past the bound: reaching it means a hang
	defer cancel()
	start := time.Now()
	err = r.Check(ctx)
	took := time.Since(start)
	switch {
	case ctx.Err() != nil:
		t.Fatalf("Check against a stalled API server hung for %s", took)
	case err == nil:
		t.Fatal("Check against a stalled API server succeeded")
	case took > bound:
		t.Errorf("Check failed after %s, want within %s: %s", took, bound, err)
	case px.Accepted() == 0:
		t.Errorf("the reconciler never reached the proxy: %s", err)
	}
	t.Logf("stalled API server: Check failed after %s: %s", took.Round(time.Millisecond), err)

	// Through the passing proxy the same client works again (its first
	// request may meet the stalled connection being closed).
	px.SetMode(faultproxy.Pass)
	poll.Until(t, time.Minute, "Check through the passing proxy", func() (bool, string) {
		err := r.Check(ctx)
		return err == nil, fmt.Sprint(err)
	})
}

// TestStalledSourceDoesNotHoldUpOthers: in the reconcile loop, an app
// whose Git source stalls (a fault proxy in front of the real Gitea) does
// not delay another app, and its own pass fails within the bound.
func TestStalledSourceDoesNotHoldUpOthers(t *testing.T) {
	needPeers(t)
	u, err := url.Parse(env.gitea.URL)
	if err != nil {
		t.Fatal(err)
	}
	px := faultproxy.Start(t, u.Host, faultproxy.Stall)
	cfg := twoApps(t, "stall-src", "http://"+px.Addr())
	r, err := reconciler.New(cfg, env.cluster.Config(), reconciler.WithRegistry(env.reg), reconciler.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	ctx, cancel := context.WithCancel(testCtx)
	done := make(chan error, 1)
	go func() { done <- r.RunUntil(ctx, ctx.Done()) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %s", err)
		}
	}()
	stored := func(app string) *status.App {
		rec, err := r.History(testCtx, app)
		if err != nil || rec.Status == nil {
			return nil
		}
		return rec.Status
	}
	good, slow := "stall-src-good", "stall-src-slow"
	poll.Until(t, 5*time.Minute, "the healthy app syncs", func() (bool, string) {
		st := stored(good)
		return st != nil && st.Sync == status.Synced, fmt.Sprintf("%+v", st)
	})
	// The stalled app's fetch is still waiting: the healthy app did not
	// wait for it to fail.
	if st := stored(slow); st != nil && st.Error != "" {
		t.Errorf("the stalled app failed before the healthy app synced: the loop waited on it: %q", st.Error)
	}
	poll.Until(t, 2*gitforge.ResponseTimeout+2*time.Minute, "the stalled app's pass fails", func() (bool, string) {
		st := stored(slow)
		return st != nil && st.Error != "", fmt.Sprintf("%+v", st)
	})
	if st := stored(slow); !strings.Contains(st.Error, "source") {
		t.Errorf("stalled app error = %q, want a source error", st.Error)
	}
}

// twoApps makes the namespaces and repositories of apps <prefix>-good and
// <prefix>-slow, each holding one ConfigMap, and returns their config.
// The slow app reaches Gitea through slowBase ("" for directly).
func twoApps(t *testing.T, prefix, slowBase string) *config.Config {
	t.Helper()
	cfgText := fmt.Sprintf("interval: 60s\nforge: {url: %q, tokenFile: %q}\napps:\n", env.gitea.URL, env.token)
	for _, name := range []string{prefix + "-good", prefix + "-slow"} {
		if _, err := env.kube.CoreV1().Namespaces().Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating namespace %s: %s", name, err)
		}
		if err := env.gitea.CreateRepo(testCtx, org, name, "main"); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		filetree.WriteIn(t, dir, map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  k: v\n"})
		if _, err := env.gitea.PushDir(testCtx, org, name, "main", dir, "settings"); err != nil {
			t.Fatal(err)
		}
		repo := env.gitea.RepoURL(org, name)
		if strings.HasSuffix(name, "-slow") && slowBase != "" {
			repo = strings.Replace(repo, env.gitea.URL, slowBase, 1)
		}
		cfgText += fmt.Sprintf("  - name: %s\n    repo: %s\n    branch: main\n    path: app\n    namespace: %s\n    syncPolicy: {automated: true}\n    allowNamespaces: [%s]\n", name, repo, name, name)
	}
	path := filepath.Join(t.TempDir(), "pinbot.yaml")
	if err := os.WriteFile(path, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
