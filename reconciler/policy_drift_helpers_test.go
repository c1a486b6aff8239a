package reconciler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/faultproxy"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler/diff"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/status"
)

// driftApp is the config of a drift scenario's app.
type driftApp struct {
	policy   string            // syncPolicy, a YAML flow mapping
	extra    []string          // more "key: value" lines of the app
	viaProxy *faultproxy.Proxy // when set, the repo URL goes through it
	interval string            // default 2s
}

// newDriftScenario is newScenario for the policy tests: the loop polls
// every 2s, and the app's config can be rewritten (configure).
func newDriftScenario(t *testing.T, name string, app driftApp) *scenario {
	t.Helper()
	needPeers(t)
	s := &scenario{t: t, name: name, repo: gitforge.Repo{Owner: org, Name: name}}
	if _, err := env.kube.CoreV1().Namespaces().Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %s", name, err)
	}
	if err := env.gitea.CreateRepo(testCtx, org, name, "main"); err != nil {
		t.Fatal(err)
	}
	s.cfg = filepath.Join(t.TempDir(), "pinbot.yaml")
	s.configure(app)
	return s
}

// configure writes app's config and replaces the scenario's Reconciler
// with one that reads it. Stop the loop first.
func (s *scenario) configure(app driftApp) {
	s.t.Helper()
	repo := env.gitea.RepoURL(org, s.name)
	if app.viaProxy != nil {
		repo = "http://" + app.viaProxy.Addr() + "/" + org + "/" + s.name + ".git"
	}
	if app.interval == "" {
		app.interval = "2s"
	}
	cfgText := fmt.Sprintf("interval: %s\nforge: {url: %q, tokenFile: %q}\napps:\n  - name: %s\n    repo: %s\n    branch: main\n    path: app\n    namespace: %s\n    syncPolicy: %s\n",
		app.interval, env.gitea.URL, env.token, s.name, repo, s.name, app.policy)
	for _, e := range app.extra {
		cfgText += "    " + e + "\n"
	}
	if err := os.WriteFile(s.cfg, []byte(cfgText), 0o600); err != nil {
		s.t.Fatal(err)
	}
	s.reload()
}

// loop runs the scenario's reconcile loop until the returned stop is
// called or the test ends.
func (s *scenario) runLoop() (stop func()) {
	ctx, cancel := context.WithCancel(testCtx)
	done := make(chan error, 1)
	r := s.r
	go func() { done <- r.RunUntil(ctx, ctx.Done()) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				s.t.Errorf("Run: %s", err)
			}
		})
	}
	s.t.Cleanup(stop)
	return stop
}

// waitStoredStatus polls the status the loop stored until cond holds.
func (s *scenario) waitStoredStatus(what string, cond func(*status.App) bool) *status.App {
	s.t.Helper()
	var st *status.App
	poll.Until(s.t, rollout, what, func() (bool, string) {
		rec, err := s.r.History(testCtx, s.name)
		if err != nil || rec.Status == nil {
			return false, fmt.Sprint("no status stored: ", err)
		}
		st = rec.Status
		return cond(st), jsonOf(st)
	})
	return st
}

func (s *scenario) historyNow() *history.Record {
	s.t.Helper()
	rec, err := s.r.History(testCtx, s.name)
	if err != nil {
		s.t.Fatal(err)
	}
	return rec
}

// entries are history entries, newest first.
type entries []history.Entry

func (e entries) latest() *history.Entry {
	if len(e) == 0 {
		return nil
	}
	return &e[0]
}

// heals returns the app's heal entries, newest first.
func (s *scenario) healEntries() entries {
	s.t.Helper()
	var out entries
	for _, e := range s.historyNow().Entries {
		if e.Trigger == history.TriggerHeal {
			out = append(out, e)
		}
	}
	return out
}

// scaleWeb sets the replicas of Deployment web in ns through the scale
// subresource, as `kubectl scale` does.
func scaleWeb(t *testing.T, ns string, n int32) {
	t.Helper()
	if err := scaleTo(testCtx, ns, n, "kubectl"); err != nil {
		t.Fatalf("scaling %s/web to %d: %s", ns, n, err)
	}
}

func scaleTo(ctx context.Context, ns string, n int32, manager string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sc, err := env.kube.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		sc.Spec.Replicas = n
		_, err = env.kube.AppsV1().Deployments(ns).UpdateScale(ctx, "web", sc, metav1.UpdateOptions{FieldManager: manager})
		return err
	})
}

// webReplicas reads spec.replicas of Deployment web in ns.
func webReplicas(t *testing.T, ns string) int32 {
	t.Helper()
	d, err := env.kube.AppsV1().Deployments(ns).Get(testCtx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *d.Spec.Replicas
}

// fight runs another controller until the test ends: it watches
// Deployment web in ns and scales it back to n whenever it differs.
func fight(t *testing.T, ns string, n int32) {
	ctx, cancel := context.WithCancel(testCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w, err := env.kube.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=web"})
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond): // retry delay, not synchronisation
				}
				continue
			}
			for ev := range w.ResultChan() {
				if d, ok := ev.Object.(*appsv1.Deployment); ok && d.Spec.Replicas != nil && *d.Spec.Replicas != n {
					_ = scaleTo(ctx, ns, n, "autoscaler") // a failure is retried on the next event
				}
			}
			w.Stop()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func driftStrings(ds []diff.Field) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.String())
	}
	return out
}
