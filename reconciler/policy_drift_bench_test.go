package reconciler_test

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/status"
)

// requestLog counts the API requests of a Reconciler by class: "list",
// "get", "dry-run", "apply", other methods; watches are not counted.
type requestLog struct {
	mu    sync.Mutex
	count map[string]int
	seen  []string
}

// counted is a second Reconciler on the scenario's config, whose API
// requests the returned log counts. The test's end closes it.
func (s *scenario) counted(opts ...reconciler.Option) (*reconciler.Reconciler, *requestLog) {
	s.t.Helper()
	log := &requestLog{}
	rc := rest.CopyConfig(env.cluster.Config())
	rc.Wrap(log.wrap)
	cfg, err := config.Load(s.cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	r, err := reconciler.New(cfg, rc, append(opts, reconciler.WithRegistry(env.reg), reconciler.WithCacheDir(s.t.TempDir()))...)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(r.Close)
	return r, log
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		q := req.URL.RawQuery
		class := strings.ToLower(req.Method)
		switch {
		case strings.Contains(q, "watch=true"):
			return rt.RoundTrip(req)
		case req.Method == http.MethodGet && (strings.Contains(q, "labelSelector") || strings.Contains(q, "limit=")):
			class = "list"
		case req.Method == http.MethodPatch && strings.Contains(q, "dryRun=All"):
			class = "dry-run"
		case req.Method == http.MethodPatch:
			class = "apply"
		}
		l.mu.Lock()
		if l.count == nil {
			l.count = map[string]int{}
		}
		l.count[class]++
		l.seen = append(l.seen, req.Method+" "+req.URL.Path)
		l.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// take returns the counts and requests since the last take.
func (l *requestLog) take() (map[string]int, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, s := l.count, l.seen
	l.count, l.seen = nil, nil
	return c, s
}

func summary(c map[string]int) string {
	var parts []string
	for k, v := range c {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// Drift detection over 500 objects: a cold diff (a fresh process, as
// `pinbot diff` runs) dry-runs every object; a warm one (the loop's next
// pass) dry-runs none and lists nothing: live state comes from watches.
// Times are logged against the 5 s target, not gated; the request counts
// are asserted.
func TestDriftManyObjects(t *testing.T) {
	s := newDriftScenario(t, "drift500", driftApp{policy: "{}"})
	files := map[string]string{}
	for i := range 500 {
		files[fmt.Sprintf("app/cm-%03d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%03d}\ndata: {num: %q}\n", i, fmt.Sprint(i))
	}
	s.push(files, "500 objects")
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatal(err)
	}

	r, log := s.counted()

	began := time.Now()
	d, err := r.Diff(testCtx, s.name)
	if err != nil || !d.InSync() {
		t.Fatalf("cold diff: %v; %s", err, jsonOf(d))
	}
	cold, _ := log.take()
	t.Logf("cold diff of 500 objects: %s (%s)", time.Since(began).Round(time.Millisecond), summary(cold))
	if cold["dry-run"] != 500 {
		t.Errorf("cold diff made %d dry runs, want 500", cold["dry-run"])
	}

	began = time.Now()
	if d, err = r.Diff(testCtx, s.name); err != nil || !d.InSync() {
		t.Fatalf("warm diff: %v; %s", err, jsonOf(d))
	}
	warm, reqs := log.take()
	t.Logf("warm diff of 500 objects: %s (%s)", time.Since(began).Round(time.Millisecond), summary(warm))
	if len(reqs) != 0 {
		t.Errorf("warm diff made requests, want none (watches only): %q", reqs)
	}

	// The first status pass starts the Pod watches verification reads;
	// the second is the steady state.
	if st, _, err := r.Status(testCtx, s.name); err != nil || st.Sync != status.Synced {
		t.Fatalf("status: %v; %s", err, jsonOf(st))
	}
	log.take()
	began = time.Now()
	if st, _, err := r.Status(testCtx, s.name); err != nil || st.Sync != status.Synced {
		t.Fatalf("status: %v; %s", err, jsonOf(st))
	}
	idle, reqs := log.take()
	t.Logf("idle status pass over 500 objects: %s (%s)", time.Since(began).Round(time.Millisecond), summary(idle))
	for _, q := range reqs {
		if q != "GET /api/v1/namespaces/pinbot-system/configmaps/pinbot-app-drift500" {
			t.Errorf("idle pass request %q: want only the history read", q)
		}
	}

	patch := []byte(`{"data":{"num":"edited"}}`)
	if _, err := env.kube.CoreV1().ConfigMaps(s.name).Patch(testCtx, "cm-250", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	poll.Until(t, 30*time.Second, "the edit seen as drift", func() (bool, string) {
		d, err = r.Diff(testCtx, s.name)
		if err != nil {
			return false, err.Error()
		}
		return len(d.Fields) == 1, jsonOf(d)
	})
	edit, _ := log.take()
	t.Logf("edit to drift report: %s (%s)", time.Since(began).Round(time.Millisecond), summary(edit))
	if want := fmt.Sprintf("ConfigMap %s/cm-250: data.num git=250 live=edited", s.name); d.Fields[0].String() != want {
		t.Errorf("drift %q, want %q", d.Fields[0], want)
	}
	if edit["dry-run"] != 1 || edit["list"] != 0 {
		t.Errorf("after one edit: %s, want one dry run and no list", summary(edit))
	}
}
