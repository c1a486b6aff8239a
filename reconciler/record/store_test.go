package record

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/poll"

	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// A record an earlier release wrote, with snake_case keys, still reads:
// an upgrade keeps every app's history and its last proof.
func TestDecodeRecordWrittenBeforeCamelCase(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 15, 0, 0, time.UTC)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "pinbot-system", Name: configMapName("web")},
		Data: map[string]string{
			historyKey: `[{"commit":"c1","time":"2026-11-30T09:15:00Z","trigger":"auto","result":"Succeeded","applied":3,"verified_at":"2026-11-30T09:15:00Z"}]`,
			statusKey: `{"app":"web","sync":"Synced","synced_commit":"c1","health":"Healthy","health_reason":"all current",
				"verified":true,"observed_at":"2026-11-30T09:15:00Z","deployed_commit":"c1","head_commit":"c1",
				"pods":[{"namespace":"web","pod":"web-1","container":"app","git_digest":"sha256:a","running_digest":"sha256:a","verdict":"Verified","workload":"Deployment/web"}]}`,
		},
	}
	got, err := decodeRecord(cm)
	if err != nil {
		t.Fatal(err)
	}
	want := &history.Record{
		Status: &status.App{App: "web", Sync: "Synced", SyncedCommit: "c1", Health: verdict.Healthy, HealthReason: "all current",
			Verified: true, ObservedAt: at, DeployedCommit: "c1", HeadCommit: "c1",
			Pods: []verdict.ContainerVerdict{{Namespace: "web", Pod: "web-1", Container: "app", GitDigest: "sha256:a",
				RunningDigest: "sha256:a", Verdict: verdict.Verified, Workload: "Deployment/web"}}},
		Entries: []history.Entry{{Commit: "c1", Time: at, Trigger: "auto", Result: "Succeeded", Applied: 3, VerifiedAt: &at}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decodeRecord (-want +got):\n%s", diff)
	}
}

// TestPrimeReadsEveryRecordAtOnce: on a real API server, after Prime,
// BeginCached of each app (one with a record, one without) reads nothing
// more, and the record primed is the one stored; another ConfigMap is
// not taken for a record. Two Primes at once (two shards taken at a
// replica's start) share one LIST.
func TestPrimeReadsEveryRecordAtOnce(t *testing.T) {
	ctx := context.Background()
	c, admin, ns := plane.Namespace(t)
	labels := func(app string) map[string]string {
		return map[string]string{"app.kubernetes.io/managed-by": "pinbot", "pinbot.dev/history-of": app}
	}
	for name, app := range map[string]string{"pinbot-app-web": "web", "not-a-record": "api", "pinbot-app-db": "db"} {
		if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels(app)},
			Data: map[string]string{"status.json": `{"app":"` + app + `","verified":true}`}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	client, reads, lists := countingLists(t, c)
	h := New(client, ns)
	var logged bytes.Buffer
	ctx = logctx.Into(ctx, slog.New(slog.NewTextHandler(&logged, nil)))
	if _, err := h.key.Get(ctx); err != nil { // a new key seals the records before: a listing of its own
		t.Fatal(err)
	}
	lists.Store(0)
	var wg sync.WaitGroup
	for _, app := range []string{"web", "api"} {
		wg.Go(func() {
			if err := h.Prime(ctx, []string{app}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := lists.Load(); n != 1 {
		t.Errorf("two Primes at once listed the records %d times; want once", n)
	}
	if !strings.Contains(logged.String(), " listed=2 ") { // web's record, and the ConfigMap that says it is api's
		t.Errorf("Prime logged %q; want it to have listed only the 2 ConfigMaps labelled for web and api, not db's record", logged.String())
	}
	reads.Store(0)
	web, err := h.BeginCached(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if s := web.Current().Status; s == nil || !s.Verified {
		t.Errorf("web's primed record: %+v, want its stored status", web.Current())
	}
	api, err := h.BeginCached(ctx, "api")
	if err != nil {
		t.Fatal(err)
	}
	if api.Current().Status != nil {
		t.Errorf("api's primed record: %+v, want none (not-a-record is not its record)", api.Current())
	}
	if n := reads.Load(); n != 0 {
		t.Errorf("BeginCached after Prime made %d requests, want none", n)
	}
}

// The records of thousands of apps are asked for by label, in
// selectors that each fit a request's URL: every app whose name a label
// can carry once, and no other.
func TestSelectorsAskForEachAppOnce(t *testing.T) {
	want := map[string]bool{"Not_A_Label_Value-": true}
	for i := range 3000 {
		want[fmt.Sprintf("app-%04d-%s", i, strings.Repeat("x", i%40))] = true
	}
	sels := selectors(want)
	if len(sels) < 2 {
		t.Fatalf("%d selectors for 3,000 apps; want them split", len(sels))
	}
	seen := map[string]int{}
	for _, s := range sels {
		if len(s) > selectorBytes+len(recordsSelector)+len(historyOfLabel)+8 {
			t.Errorf("a selector of %d bytes; want at most about %d", len(s), selectorBytes)
		}
		sel, err := labels.Parse(s)
		if err != nil {
			t.Fatalf("selector %.60s…: %v", s, err)
		}
		reqs, _ := sel.Requirements()
		for _, r := range reqs {
			if r.Key() == historyOfLabel {
				for _, v := range r.Values().UnsortedList() {
					seen[v]++
				}
			}
		}
	}
	if want["Not_A_Label_Value-"] || seen["Not_A_Label_Value-"] > 0 {
		t.Error("an app whose name no label carries was asked for, or kept in want")
	}
	for app := range want {
		if seen[app] != 1 {
			t.Errorf("%s asked for %d times; want once", app, seen[app])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d apps asked for; want %d", len(seen), len(want))
	}
}

// TestFollowTrustsTheCopyUntilAnotherWrites: on a real API server, with
// the records followed, BeginCached reads a record once and then trusts
// its copy past CacheTTL, until the watch sees another process write the
// record; then it reads the new version.
func TestFollowTrustsTheCopyUntilAnotherWrites(t *testing.T) {
	ctx := context.Background()
	h, admin, ns, reads := followedWeb(t)
	poll.Until(t, 10*time.Second, "the records' watch in", func() (bool, string) {
		following, _ := h.watched("web", nil)
		return following, ""
	})
	if _, err := h.BeginCached(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	// The API server's watch cache may lag the read on a busy machine:
	// the watch has to have delivered the version the copy holds.
	poll.Until(t, 10*time.Second, "the watch holding the copy's version", func() (bool, string) {
		h.mu.Lock()
		cm := h.cached["web"].cm
		h.mu.Unlock()
		_, current := h.watched("web", cm)
		return current, ""
	})
	h.mu.Lock()
	cached := h.cached["web"]
	cached.at = time.Now().Add(-2 * CacheTTL)
	h.cached["web"] = cached
	h.mu.Unlock()
	reads.Store(0)
	if _, err := h.BeginCached(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if n := reads.Load(); n != 0 {
		t.Errorf("BeginCached of a followed record nobody wrote, past CacheTTL: %d requests, want none", n)
	}

	writeAsAnother(t, h, admin, ns)
	poll.Until(t, 10*time.Second, "BeginCached reading the other process's write", func() (bool, string) {
		txn, err := h.BeginCached(ctx, "web")
		if err != nil {
			return false, err.Error()
		}
		s := txn.Current().Status
		return s != nil && !s.Verified, fmt.Sprintf("%+v", s)
	})
}

// TestGetAnswersFromTheFollowedCopy: with the records followed, Get
// reads a record once, answers from its copy while the watch says nobody
// wrote it, and reads it again once another process has.
func TestGetAnswersFromTheFollowedCopy(t *testing.T) {
	ctx := context.Background()
	h, admin, ns, reads := followedWeb(t)
	// The first Get reads; once the watch holds the version read, the
	// next answer from the copy.
	poll.Until(t, 10*time.Second, "Get answering from its copy", func() (bool, string) {
		if _, err := h.Get(ctx, "web"); err != nil {
			return false, err.Error()
		}
		before := reads.Load()
		rec, err := h.Get(ctx, "web")
		if err != nil {
			return false, err.Error()
		}
		return reads.Load() == before && rec.Status != nil && rec.Status.Verified, fmt.Sprintf("%d requests", reads.Load()-before)
	})

	writeAsAnother(t, h, admin, ns)
	poll.Until(t, 10*time.Second, "Get reading the other process's write", func() (bool, string) {
		rec, err := h.Get(ctx, "web")
		if err != nil {
			return false, err.Error()
		}
		return rec.Status != nil && !rec.Status.Verified, fmt.Sprintf("%+v", rec.Status)
	})
	// A copy changed outside pinbot is refused as the record is.
	h.mu.Lock()
	cached := h.cached["web"]
	forged := cached.cm.DeepCopy()
	forged.Data["status.json"] = `{"app":"web","verified":true}`
	h.cached["web"] = cachedRecord{cm: forged, at: cached.at}
	h.mu.Unlock()
	if _, err := h.Get(ctx, "web"); !errors.Is(err, ErrTampered) {
		t.Errorf("Get of a copy whose seal does not match: %v, want ErrTampered", err)
	}
}

// followedWeb is a History of a fresh namespace holding web's verified
// record, its records followed, reading through a client that counts.
func followedWeb(t *testing.T) (*History, kubernetes.Interface, string, *atomic.Int64) {
	t.Helper()
	c, admin, ns := plane.Namespace(t)
	labels := map[string]string{"app.kubernetes.io/managed-by": "pinbot", "pinbot.dev/history-of": "web"}
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pinbot-app-web", Labels: labels},
		Data: map[string]string{"status.json": `{"app":"web","verified":true}`}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client, reads := counting(t, c)
	h := New(client, ns)
	h.Follow()
	t.Cleanup(h.Close)
	return h, admin, ns, reads
}

// writeAsAnother writes web's record unverified, sealed as pinbot seals:
// another replica's write.
func writeAsAnother(t *testing.T, h *History, admin kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	key, err := h.key.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := admin.CoreV1().ConfigMaps(ns).Get(ctx, "pinbot-app-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data = map[string]string{"status.json": `{"app":"web","verified":false}`}
	cm.Data[sealKey] = sealOf(key, "web", cm.Data)
	if _, err := admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// counting is a client of c that counts its requests for ConfigMaps by
// name (reads and writes of a record; not the watch or a list).
func counting(t *testing.T, c *kube.Cluster) (kubernetes.Interface, *atomic.Int64) {
	client, n, _ := countingLists(t, c)
	return client, n
}

// countingLists is counting, that counts the LISTs of ConfigMaps too.
func countingLists(t *testing.T, c *kube.Cluster) (client kubernetes.Interface, named, lists *atomic.Int64) {
	t.Helper()
	named, lists = &atomic.Int64{}, &atomic.Int64{}
	rc := rest.CopyConfig(c.Config())
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			switch {
			case strings.Contains(req.URL.Path, "/configmaps/"):
				named.Add(1)
			case strings.HasSuffix(req.URL.Path, "/configmaps") && req.Method == http.MethodGet && req.URL.Query().Get("watch") == "":
				lists.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return client, named, lists
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
