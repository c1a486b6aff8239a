package reconciler_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/history"
)

// historyCounter counts the requests a Reconciler makes for one app's
// history ConfigMap, by verb.
type historyCounter struct {
	rt   http.RoundTripper
	ns   string // the state namespace
	name string // the ConfigMap
	mu   sync.Mutex
	n    map[string]int
}

func (c *historyCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	prefix := "/api/v1/namespaces/" + c.ns + "/configmaps"
	verb := ""
	switch {
	case req.URL.Path == prefix+"/"+c.name && req.Method == http.MethodGet:
		verb = "GET"
	case req.URL.Path == prefix+"/"+c.name && req.Method == http.MethodPut:
		verb = "PUT"
	case req.URL.Path == prefix && req.Method == http.MethodPost:
		verb = "POST" // pinbot creates no other ConfigMap in its namespace
	}
	if verb != "" {
		c.mu.Lock()
		c.n[verb]++
		c.mu.Unlock()
	}
	return c.rt.RoundTrip(req)
}

// take returns the counts since the last call.
func (c *historyCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

// A sync pass reads the app's history ConfigMap once and writes it at most
// once, however much it records: the sync, a superseded sync, the
// verification and the status.
func TestSyncPassReadsHistoryOnce(t *testing.T) {
	s := newScenario(t, "history-once", "{}")
	cfg, err := config.Load(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	counter := &historyCounter{ns: cfg.StateNamespace, name: "pinbot-app-" + s.name, n: map[string]int{}}
	rc := env.cluster.Config()
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		counter.rt = rt
		return counter
	})
	r, err := reconciler.New(cfg, rc, reconciler.WithRegistry(env.reg), reconciler.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)

	good := pushImage(t, "history-once-app", "v1")
	ghost := ghostImage(good)
	for i, step := range []struct {
		name  string
		files map[string]string
		want  map[string]int
	}{
		// The first sync creates the ConfigMap: one read finds none.
		{"first sync", map[string]string{"app/deploy.yaml": deployment(1, good.ref())}, map[string]int{"GET": 1, "POST": 1}},
		// An image that is not there: the sync stays unverified.
		{"unverified sync", map[string]string{"app/deploy.yaml": deployment(1, ghost)}, map[string]int{"GET": 1, "PUT": 1}},
		// It supersedes the unverified sync and records itself.
		{"superseding sync", map[string]string{"app/deploy.yaml": deployment(2, good.ref())}, map[string]int{"GET": 1, "PUT": 1}},
	} {
		commit := s.push(step.files, step.name)
		counter.take()
		st, _, err := r.Sync(testCtx, s.name, 0)
		if err != nil {
			t.Fatalf("step %d (%s): Sync: %s", i, step.name, err)
		}
		if st.Commit != commit {
			t.Fatalf("step %d (%s): synced %s, want %s", i, step.name, st.Commit, commit)
		}
		if diff := cmp.Diff(step.want, counter.take()); diff != "" {
			t.Errorf("step %d (%s): history ConfigMap requests of one sync pass (-want +got):\n%s", i, step.name, diff)
		}
	}
	rec, err := r.History(testCtx, s.name)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Entries) != 3 {
		t.Fatalf("history holds %d entries, want 3: %+v", len(rec.Entries), rec.Entries)
	}
	if e := rec.Entries[1]; !e.Final || !strings.Contains(e.Summary, "superseded by") && !strings.Contains(e.Summary, "replaced by") || e.Reported != "error" {
		t.Errorf("the unverified sync, once superseded: final %v, summary %q, reported %q; want final, superseded, error",
			e.Final, e.Summary, e.Reported)
	}
}

// ghostImage is a reference to an image of img's repository that was
// never pushed.
func ghostImage(img image) string {
	sum := sha256.Sum256([]byte("never pushed"))
	return img.repo + "@sha256:" + hex.EncodeToString(sum[:])
}

// A sync still awaiting its verification when the loop finds a newer
// commit it does not sync itself (the app is not automated) is settled as
// superseded, and its commit status turns to error. (The entry used to
// keep the state reported before, pending.)
func TestSupersededByNewHead(t *testing.T) {
	s := newScenario(t, "superseded", "{}")
	img := pushImage(t, "superseded-app", "v1")
	old := s.push(map[string]string{"app/deploy.yaml": deployment(1, ghostImage(img))}, "Pin an image that is not there")
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatal(err)
	}
	head := s.push(map[string]string{"app/deploy.yaml": deployment(1, img.ref())}, "Pin the image that is there")
	s.run()
	var got history.Entry
	poll.Until(t, rollout, "the loop settles the old sync as superseded", func() (bool, string) {
		rec, err := s.r.History(testCtx, s.name)
		if err != nil || len(rec.Entries) == 0 {
			return false, fmt.Sprint(err)
		}
		got = rec.Entries[0]
		return got.Final, fmt.Sprintf("%+v", got)
	})
	// Its Pods were seen failing to pull: the history says it never
	// verified, and what was seen, not merely that a newer one came.
	want := "never verified, replaced by " + head[:12] + "; last seen Progressing: "
	if got.Commit != old || !strings.HasPrefix(got.Summary, want) || got.Reported != "error" {
		t.Errorf("entry of %s: summary %q, reported %q; want the entry of %s, %q…, reported error", got.Commit, got.Summary, got.Reported, old, want)
	}
	want = got.Summary
	if cs := s.commitStatus(old); cs == nil || cs.State != "error" || cs.Description != want {
		t.Errorf("commit status of the superseded sync: %s", indentStatus(cs))
	}
}
