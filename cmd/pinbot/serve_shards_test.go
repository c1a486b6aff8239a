package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/testenv/filetree"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/internal/testenv/stack"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/record"
	"pinbot.dev/pinbot/serve/shard"
)

// TestServeShards runs three replicas of the real binary with --shards 3
// over 30 apps: each app is passed by the replica holding its shard's
// Lease, and every replica passes some; SIGKILL of one moves its apps to
// the others once its Leases expire; a push announced to any replica
// reaches each app's holder; and no commit of any app is ever synced
// twice.
func TestServeShards(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const apps, shards, secret = 30, 3, "serve-shards-s3cret"
	files := func(gen int) map[string]string {
		out := map[string]string{}
		for i := range apps {
			out[fmt.Sprintf("app-%02d/cm.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%02d}\ndata: {gen: %q}\n", i, fmt.Sprint(gen))
		}
		return out
	}
	// A shard keeps a namespace's apps together: six namespaces, two
	// in each shard, hold five apps each.
	var spaces []string
	for i, per := 0, map[int]int{}; len(spaces) < 2*shards; i++ {
		ns := fmt.Sprintf("team-%d", i)
		if k := shard.Of("/"+ns, shards); per[k] < 2 {
			per[k]++
			spaces = append(spaces, ns)
		}
	}
	nsOf := func(app string) string {
		var i int
		fmt.Sscanf(app, "app-%d", &i)
		return spaces[i%len(spaces)]
	}
	rig := newServeRig(ctx, t, stack.Options{Namespaces: append([]string{"pinbot-system"}, spaces...)}, files(1), secret)
	g, kube := rig.peers.Gitea, rig.peers.Kube
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "interval: 10m\nforge: {url: %q}\napps:\n", g.URL)
	var names []string
	for i := range apps {
		name := fmt.Sprintf("app-%02d", i)
		names = append(names, name)
		fmt.Fprintf(&cfg, "  - {name: %s, repo: %s, branch: main, path: %s, namespace: %s, syncPolicy: {automated: true}}\n",
			name, g.RepoURL(g.AdminUser, "manifests"), name, nsOf(name))
	}
	rig.cfg = rig.write("pinbot.yaml", cfg.String())
	records := record.New(kube, "pinbot-system")

	holders := func() map[int]string {
		out := map[int]string{}
		for k := range shards {
			l, err := kube.CoordinationV1().Leases("pinbot-system").Get(ctx, fmt.Sprintf("pinbot-shard-%d", k), metav1.GetOptions{})
			if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
				out[k] = *l.Spec.HolderIdentity
			}
		}
		return out
	}
	// passedBy checks that every app's stored status was written by the
	// holder of its shard, among live, after it synced commit, and
	// returns the apps of each replica.
	passedBy := func(commit string, live ...string) (map[string][]string, string) {
		hs := holders()
		per := map[string][]string{}
		for _, app := range names {
			rec, err := records.Get(ctx, app)
			if err != nil || rec.Status == nil {
				return nil, fmt.Sprintf("app %s has no status yet (%v)", app, err)
			}
			s := rec.Status
			holder := hs[shard.Of("/"+nsOf(app), shards)]
			switch {
			case s.SyncedCommit != commit:
				return nil, fmt.Sprintf("app %s synced %.8s, want %.8s", app, s.SyncedCommit, commit)
			case s.Replica != holder:
				return nil, fmt.Sprintf("app %s was passed by %q, its shard's holder is %q (holders %v)", app, s.Replica, holder, hs)
			}
			per[s.Replica] = append(per[s.Replica], app)
		}
		for _, id := range live {
			if len(per[id]) == 0 {
				return nil, fmt.Sprintf("replica %s passes no app (holders %v)", id, hs)
			}
		}
		for id := range per {
			if !slices.Contains(live, id) {
				return nil, fmt.Sprintf("replica %s, not among %v, still passes %v", id, live, per[id])
			}
		}
		return per, ""
	}
	syncedOnce := func(commit string) {
		t.Helper()
		for _, app := range names {
			rec, err := records.Get(ctx, app)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, e := range rec.Entries {
				if e.Commit == commit && e.Trigger != history.TriggerHeal {
					n++
				}
			}
			if n != 1 {
				t.Errorf("app %s: commit %.8s synced %d times, want once: %+v", app, commit, n, rec.Entries)
			}
		}
	}

	rs := map[string]*replica{}
	for _, id := range []string{"shard-a", "shard-b", "shard-c"} {
		rs[id] = rig.serve(id, "--shards", "3", "-v")
	}
	var per map[string][]string
	poll.Until(t, 120*time.Second, "30 apps synced, each by its shard's holder, on all three replicas", func() (bool, string) {
		var why string
		per, why = passedBy(rig.commit, "shard-a", "shard-b", "shard-c")
		return why == "", why
	})
	t.Logf("apps per replica: a %d, b %d, c %d", len(per["shard-a"]), len(per["shard-b"]), len(per["shard-c"]))
	// Each replica caches the Pods of its own apps' namespaces alone,
	// though it may list the whole cluster.
	cachesAreTheirApps := func(live ...string) (bool, string) {
		var all []string
		for _, id := range live {
			var want []string
			for _, app := range per[id] {
				if ns := nsOf(app); !slices.Contains(want, ns) {
					want = append(want, ns)
				}
			}
			slices.Sort(want)
			got := cachedNamespaces(t, rs[id].addr)
			if !slices.Equal(got, want) {
				return false, fmt.Sprintf("replica %s caches %q; its apps are in %q", id, got, want)
			}
			all = append(all, got...)
		}
		slices.Sort(all)
		if want := slices.Sorted(slices.Values(spaces)); !slices.Equal(all, want) {
			return false, fmt.Sprintf("the replicas cache %q between them; want each of %q once", all, want)
		}
		return true, ""
	}
	poll.Until(t, 30*time.Second, "each replica caches its own apps' namespaces", func() (bool, string) { return cachesAreTheirApps("shard-a", "shard-b", "shard-c") })

	// SIGKILL: the Leases of the dead replica expire, and the others pass
	// its apps.
	victim := rs["shard-b"]
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	killed := time.Now()
	gone := per["shard-b"]
	// A stored status the new holder finds unchanged is not written
	// again: each replica's /metrics, which reports the apps it passed,
	// says who passes them now.
	poll.Until(t, 60*time.Second, "the killed replica's apps move to the others", func() (bool, string) {
		hs := holders()
		passed := map[string]map[string]bool{}
		for _, id := range []string{"shard-a", "shard-c"} {
			passed[id] = appsOnMetrics(t, rs[id].addr)
		}
		for _, app := range gone {
			if h := hs[shard.Of("/"+nsOf(app), shards)]; h == "shard-b" || !passed[h][app] {
				return false, fmt.Sprintf("app %s: its shard held by %q, which has not passed it yet", app, h)
			}
		}
		return true, ""
	})
	// The bound the shard package's test holds exactly is the Lease
	// duration and a retry period (5 s here); this adds the first pass.
	took := time.Since(killed)
	t.Logf("the killed replica's %d apps passed by the others %s after SIGKILL (lease 4s, retry 1s)", len(gone), took.Round(time.Millisecond))
	if took > 15*time.Second {
		t.Errorf("the apps moved %s after SIGKILL, want within the Lease duration and a pass", took)
	}

	// A push, announced to one replica only, reaches each app's holder.
	second, err := g.PushDir(ctx, g.AdminUser, "manifests", "main", filetree.Write(t, files(2)), "Generation 2")
	if err != nil {
		t.Fatal(err)
	}
	if code := pushHook(t, rs["shard-a"].addr, secret, second, g.RepoURL(g.AdminUser, "manifests")); code != http.StatusAccepted {
		t.Fatalf("push webhook: %d, want 202", code)
	}
	poll.Until(t, 60*time.Second, "the push synced on every app by the two replicas left", func() (bool, string) {
		_, why := passedBy(second, "shard-a", "shard-c")
		return why == "", why
	})
	poll.Until(t, 30*time.Second, "the survivors cache the dead replica's namespaces", func() (bool, string) {
		per, _ = passedBy(second, "shard-a", "shard-c")
		return cachesAreTheirApps("shard-a", "shard-c")
	})
	cm, err := kube.CoreV1().ConfigMaps(nsOf("app-29")).Get(ctx, "cm-29", metav1.GetOptions{})
	if err != nil || cm.Data["gen"] != "2" {
		t.Errorf("cm-29 after the push: %v %v, want gen 2", cm.Data, err)
	}
	syncedOnce(rig.commit)
	syncedOnce(second)

	// A push that changes one app's files passes that app alone: the
	// others' last renders read nothing it changed, so they note the
	// commit at their interval (10m here), not now.
	one := files(2)
	one["app-07/cm.yaml"] = files(3)["app-07/cm.yaml"]
	third, err := g.PushDir(ctx, g.AdminUser, "manifests", "main", filetree.Write(t, one), "Generation 3 of app-07")
	if err != nil {
		t.Fatal(err)
	}
	// What each replica's pushes passed and left alone so far.
	pushed := func() (passed, unchanged float64) {
		for _, id := range []string{"shard-a", "shard-c"} {
			passed += max(metric(rs[id], `pinbot_push_apps_total{result="passed"}`), 0)
			unchanged += max(metric(rs[id], `pinbot_push_apps_total{result="unchanged"}`), 0)
		}
		return passed, unchanged
	}
	passed0, unchanged0 := pushed()
	if code := pushHook(t, rs["shard-c"].addr, secret, third, g.RepoURL(g.AdminUser, "manifests")); code != http.StatusAccepted {
		t.Fatalf("push webhook: %d, want 202", code)
	}
	poll.Until(t, 60*time.Second, "app-07 synced the push that changed it", func() (bool, string) {
		rec, err := records.Get(ctx, "app-07")
		if err != nil || rec.Status == nil {
			return false, fmt.Sprint(err)
		}
		return rec.Status.SyncedCommit == third, "app-07 synced " + rec.Status.SyncedCommit
	})
	// Each replica has answered the push once every app is counted, as
	// passed or left alone: app-07 alone passed.
	poll.Until(t, 30*time.Second, "both replicas answered the push", func() (bool, string) {
		p, u := pushed()
		p, u = p-passed0, u-unchanged0
		if p+u > float64(len(names)) || p > 1 {
			t.Fatalf("the push passed %v apps and left %v alone; want app-07 alone of %d passed", p, u, len(names))
		}
		return p+u == float64(len(names)), fmt.Sprintf("%v passed, %v left alone", p, u)
	})
	for _, app := range names {
		rec, err := records.Get(ctx, app)
		if err != nil || rec.Status == nil {
			t.Fatalf("app %s: %v", app, err)
		}
		if app != "app-07" && rec.Status.Commit != second {
			t.Errorf("app %s was passed at %.8s after a push that did not change it (want its last pass at %.8s)", app, rec.Status.Commit, second)
		}
	}
	var held []string
	for k, id := range holders() {
		held = append(held, fmt.Sprintf("%d:%s", k, id))
	}
	sort.Strings(held)
	t.Logf("shards held at the end: %v", held)
}

// appsOnMetrics returns the apps whose sync state the replica at addr
// reports on /metrics: with shards, the apps it passed.
func appsOnMetrics(t *testing.T, addr string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, app := range onMetrics(addr, `pinbot_app_synced{app="`) {
		out[app] = true
	}
	return out
}

// cachedNamespaces are the namespaces of pinbot's own cluster whose Pods
// the replica at addr caches, as its /metrics says.
func cachedNamespaces(t *testing.T, addr string) []string {
	t.Helper()
	out := onMetrics(addr, `pinbot_cache_namespace{cluster="in-cluster",namespace="`)
	slices.Sort(out)
	return out
}

// onMetrics returns, of each series on the /metrics of the replica at
// addr whose line begins with prefix, the label value prefix opens.
func onMetrics(addr, prefix string) []string {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil
	}
	var out []string
	for line := range strings.Lines(string(body)) {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			if v, _, ok := strings.Cut(rest, `"`); ok {
				out = append(out, v)
			}
		}
	}
	return out
}
