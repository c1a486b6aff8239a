package dashboard

import (
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/release"
)

// fixtureLedger is a bad release: v3 proven and soaked in staging,
// forced into prod, where its new Pod never became Ready while the two
// old Pods still serve v2; pinbot held v3 in prod and opened the
// rollback to v2.
func fixtureLedger() Ledger {
	t := func(ago time.Duration) *time.Time { v := now.Add(-ago); return &v }
	l := release.New()
	*l.Track("staging", "platform/web") = release.Track{Pinned: digestB, PinnedTag: "v3", Proven: digestB, ProvenSince: t(40 * time.Minute),
		LastProven: digestB, LastProvenTag: "v3", PrevProven: digestA, PrevProvenTag: "v2"}
	*l.Track("prod", "platform/web") = release.Track{Pinned: digestB, PinnedTag: "v3",
		Why:        "app web-prod is Progressing: Deployment/web-prod: 1 of 3 updated replicas are not Ready\nPod prod/web-prod-new container app: not Ready",
		LastProven: digestA, LastProvenTag: "v2",
		Merged:   &release.Merge{Digest: digestB, At: now.Add(-2 * time.Minute), Done: true, Failure: "not proven within 1m"},
		Rollback: &release.Proposal{PR: 12, Digest: digestA, Tag: "v2", Failed: digestB, Evidence: "not proven within 1m0s of the merge: app web-prod is Progressing\nPod prod/web-prod-new container app: not Ready for 1m30s"}}
	l.Holds = []release.Hold{{Env: "prod", Image: "platform/web", Digest: digestB, Reason: "failed to prove in prod: not proven within 1m0s of the merge", Since: now.Add(-time.Minute), From: "prod"}}
	l.Events = []release.Event{
		{At: now.Add(-10 * time.Minute), Env: "staging", Image: "platform/web", Reason: release.ReasonSoaked, What: "soaked 30m"},
		{At: now.Add(-time.Minute), Env: "prod", Image: "platform/web", Reason: release.ReasonRollbackOpened, What: "opened #12"},
	}
	notReady := now.Add(-90 * time.Second)
	return Ledger{
		Repo: "platform/manifests", Web: "http://gitea.test/platform/manifests", Ledger: l,
		Chain: release.Chain{
			{Name: "staging", Apps: []string{"web-staging"}, Soak: 30 * time.Minute},
			{Name: "prod", From: "staging", Apps: []string{"web-prod"}},
		},
		Apps: map[string]App{
			"web-staging": {Name: "web-staging", Status: &status.App{Verified: true, Proof: verdict.Verified},
				Verification: &verdict.Verification{Verified: true, Containers: []verdict.ContainerVerdict{
					{Workload: "Deployment/web", Container: "app", Pod: "web-staging-1", GitDigest: digestB, RunningDigest: digestB, Tag: "v3", Verdict: verdict.Verified, Ready: true}}}},
			"web-prod": {Name: "web-prod", Status: &status.App{Proof: verdict.Verified, Verified: true},
				Verification: &verdict.Verification{Verified: true, Containers: []verdict.ContainerVerdict{
					{Workload: "Deployment/web-prod", Container: "app", Pod: "web-prod-new", GitDigest: digestB, RunningDigest: digestB, Tag: "v3", Verdict: verdict.Verified, NotReadySince: &notReady}},
					OldRevisions: []verdict.ContainerVerdict{
						{Workload: "Deployment/web-prod", Container: "app", Pod: "web-prod-old-1", GitDigest: digestB, RunningDigest: digestA, Verdict: verdict.Mismatch, Ready: true},
						{Workload: "Deployment/web-prod", Container: "app", Pod: "web-prod-old-2", GitDigest: digestB, RunningDigest: digestA, Verdict: verdict.Mismatch, Ready: true},
					}}},
		},
	}
}

// TestReleasePage: the stages in chain order, the failing one failing
// with its short reason first, its Pods per cluster with the old ones
// serving v2, the rollback linked, the hold, and what waits at the gate.
func TestReleasePage(t *testing.T) {
	p := BuildReleases([]Ledger{fixtureLedger()}, now, 5*time.Second)
	if p.Title != "pinbot: platform/manifests" || p.Section != "releases" || len(p.Releases) != 1 {
		t.Fatalf("page %q, section %q, %d releases", p.Title, p.Section, len(p.Releases))
	}
	r := p.Releases[0]
	if len(r.Stages) != 2 || r.Stages[0].Name != "staging" || r.Stages[1].Name != "prod" {
		t.Fatalf("stages %+v, want staging then prod", r.Stages)
	}
	staging, prod := r.Stages[0], r.Stages[1]
	if staging.Class != "ok" || staging.State != "Proven" || staging.Gate != nil {
		t.Errorf("staging: %s %s, gate %+v; want ok Proven, no gate", staging.Class, staging.State, staging.Gate)
	}
	im := staging.Images[0]
	if im.Proven != (Version{"v3", "sha256:bbbbbbbbbbbb"}) || im.ProvenSince.Rel != "40m ago" || im.Soak == nil || !im.Soak.Done || im.Soak.Text != "soaked 30m" {
		t.Errorf("staging's image: %+v, soak %+v", im, im.Soak)
	}
	// The rollback is open, not merged: nothing is rolled back yet, and
	// the failed digest is named by its version.
	if prod.Class != "bad" || prod.State != "Rollback open" ||
		!strings.HasPrefix(prod.Summary, "v3 (sha256:bbbbbbbbbbbb) failed; the rollback to v2 (sha256:aaaaaaaaaaaa) is open") {
		t.Errorf("prod: %s %s %q", prod.Class, prod.State, prod.Summary)
	}
	// Once it merged, and until it proves, prod is rolling back.
	merged := fixtureLedger()
	tr := merged.Ledger.Track("prod", "platform/web")
	tr.Rollback, tr.Pinned, tr.PinnedTag = nil, digestA, "v2"
	tr.Merged = &release.Merge{Digest: digestA, At: now.Add(-20 * time.Second), Rollback: true}
	if p := BuildReleases([]Ledger{merged}, now, 5*time.Second).Releases[0].Stages[1]; p.State != "Rolling back" || !strings.HasPrefix(p.Summary, "the rollback to v2 (sha256:aaaaaaaaaaaa) merged 20s ago") {
		t.Errorf("prod, its rollback merged: %s %q", p.State, p.Summary)
	}
	rb := prod.Images[0].Rollback
	if rb == nil || rb.Link.URL != "http://gitea.test/platform/manifests/pulls/12" || rb.Link.Text != "#12" {
		t.Errorf("prod's rollback: %+v", rb)
	}
	if len(prod.Holds) != 1 || prod.Holds[0].Digest != (Version{"v3", "sha256:bbbbbbbbbbbb"}) || prod.Holds[0].Since.Rel != "1m ago" {
		t.Errorf("prod's holds: %+v", prod.Holds)
	}
	want := ClusterPods{Cluster: "in-cluster", Ready: 0, Total: 1, Old: 2, Serving: "v2 (sha256:aaaaaaaaaaaa)"}
	if len(prod.Clusters) != 1 || prod.Clusters[0] != want {
		t.Errorf("prod's Pods: %+v, want %+v", prod.Clusters, want)
	}
	if g := prod.Gate; g == nil || g.Class != "bad" || g.Text != "v3 (sha256:bbbbbbbbbbbb) is held here" {
		t.Errorf("prod's gate: %+v", g)
	}
	if len(r.Events) != 2 || r.Events[0].Reason != release.ReasonRollbackOpened || r.Events[0].Class != "bad" {
		t.Errorf("events, newest first: %+v", r.Events)
	}

	// A remote cluster that stopped answering makes its stage Unknown,
	// naming it.
	lg := fixtureLedger()
	a := lg.Apps["web-staging"]
	a.Status = &status.App{Proof: verdict.Unknown, Cluster: "spoke", Error: "cluster spoke (https://10.0.0.9:6443): the API server does not answer"}
	lg.Apps["web-staging"] = a
	s := BuildReleases([]Ledger{lg}, now, 0).Releases[0].Stages[0]
	if s.Class != "bad" || s.State != "Unknown" || !strings.Contains(s.Summary, "cluster spoke") || s.Clusters[0].Cluster != "spoke" {
		t.Errorf("staging with its cluster gone: %s %s %q %+v", s.Class, s.State, s.Summary, s.Clusters)
	}
}

func TestBrief(t *testing.T) {
	long := strings.Repeat("word ", 40)
	for _, tc := range []struct{ in, summary, detail string }{
		{"short", "short", ""},
		{"first\nsecond", "first", "first\nsecond"},
		{long, strings.TrimSpace(long[:139]) + "…", strings.TrimSpace(long)},
	} {
		s, d := brief(tc.in)
		if s != tc.summary || d != tc.detail {
			t.Errorf("brief(%q) = %q, %q; want %q, %q", tc.in, s, d, tc.summary, tc.detail)
		}
	}
}

// TestStagePastTheGate: a digest that merged past pinbot's gate is a red
// stage saying how, even once it is proven there.
func TestStagePastTheGate(t *testing.T) {
	lg := fixtureLedger()
	tr := lg.Ledger.Track("staging", "platform/web")
	tr.Merged = &release.Merge{Digest: tr.Pinned, At: now.Add(-time.Hour), Proved: true, Bypass: "#9 merged with a pinbot/gate that mallory posted, not pinbot"}
	env, _ := lg.Chain.Get("staging")
	s := stageView(lg, env, now)
	if s.Class != "bad" || s.State != "Past the gate" || !strings.Contains(s.Summary+s.Detail, "mallory posted") {
		t.Errorf("stage %s %q: %q %q; want a red stage naming the forged gate", s.Class, s.State, s.Summary, s.Detail)
	}

	// A force from the page says who forced it in, and why.
	tr.Merged.Bypass = "#10 merged while pinbot/gate said failure: not proven in staging"
	lg.Ledger.LogBy(now.Add(-2*time.Hour), "staging", "platform/web", release.ReasonPromotionOpened,
		"olga forced "+imageref.Short(tr.Pinned)+" into staging past the gate: CVE-2026-0001 (#10)", "olga", "CVE-2026-0001")
	if s := stageView(lg, env, now); !strings.Contains(s.Summary+s.Detail, "forced in by olga: CVE-2026-0001") {
		t.Errorf("stage %q: %q %q; want who forced it in, and why", s.State, s.Summary, s.Detail)
	}
}

// TestTheArrowAsksTheChain: on the hotfix day (prod rolling back from
// 1.0.2 to 1.0.1, staging proven on 1.0.0, which ran in prod before), the
// arrow into prod said "1.0.0 is next", a move the chain never makes. It
// says what release.Next says: prod rolls back, and after the rollback,
// that only a rollback goes back to 1.0.0.
func TestTheArrowAsksTheChain(t *testing.T) {
	const d100, d101, d102 = digestA, digestB, "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
	since := now.Add(-time.Hour)
	l := release.New()
	*l.Track("staging", "platform/web") = release.Track{Pinned: d100, PinnedTag: "1.0.0", Proven: d100, ProvenSince: &since}
	*l.Track("prod", "platform/web") = release.Track{Pinned: d102, PinnedTag: "1.0.2", LastProven: d101, LastProvenTag: "1.0.1", PrevProven: d100, PrevProvenTag: "1.0.0",
		Rollback: &release.Proposal{PR: 7, Digest: d101, Tag: "1.0.1", Failed: d102}}
	chain := release.Chain{{Name: "staging", Apps: []string{"web-staging"}}, {Name: "prod", From: "staging", Apps: []string{"web-prod"}}}
	lg := Ledger{Repo: "platform/manifests", Ledger: l, Chain: chain}
	g := gate(lg, &chain[1], now)
	if want := "1.0.0 (sha256:aaaaaaaaaaaa) waits: prod rolls back (#7)"; g.Text != want {
		t.Errorf("rolling back: %q, want %q", g.Text, want)
	}
	*l.Track("prod", "platform/web") = release.Track{Pinned: d101, PinnedTag: "1.0.1", Proven: d101, ProvenSince: &since, LastProven: d101, PrevProven: d100}
	if g := gate(lg, &chain[1], now); strings.Contains(g.Text, "next") || !strings.Contains(g.Text, "only a rollback goes back to it") {
		t.Errorf("rolled back: %q, want that only a rollback goes back to 1.0.0", g.Text)
	}
	*l.Track("staging", "platform/web") = release.Track{Pinned: d102, PinnedTag: "1.0.2", Proven: d102, ProvenSince: &since}
	l.PauseBy("prod", "alice", "incident 42", now)
	if g := gate(lg, &chain[1], now); g.Text != "1.0.2 (sha256:cccccccccccc) waits: alice paused the promotions into prod: incident 42" || g.Class != "warn" {
		t.Errorf("paused: %+v", g)
	}
}

// TestDecisionsNameVersions: a decision's digests are named by the
// versions the ledger knows them by, as the stages name them; a digest
// it knows no version of stays as it is.
func TestDecisionsNameVersions(t *testing.T) {
	lg := fixtureLedger()
	lg.Ledger.Log(now, "prod", "platform/web", release.ReasonHeld, imageref.Short(digestB)+" failed to prove and is held; rolling back to "+imageref.Short(digestA)+", not "+"sha256:cccccccccccc")
	ev := BuildReleases([]Ledger{lg}, now, time.Second).Releases[0].Events[0]
	want := "v3 (" + imageref.Short(digestB) + ") failed to prove and is held; rolling back to v2 (" + imageref.Short(digestA) + "), not " + "sha256:cccccccccccc"
	if ev.What != want {
		t.Errorf("the decision reads %q, want %q", ev.What, want)
	}
}

// TestAppsPageShowsWhatHoldsAnEnvironmentBack: on the apps page, the app
// in prod carries prod's state in the chain (its rollback open, its
// pinned digest held); the app in staging carries none.
func TestAppsPageShowsWhatHoldsAnEnvironmentBack(t *testing.T) {
	apps := fixtureApps()
	apps[0].Repo, apps[0].Env = "platform/manifests", "prod"
	apps[2].Repo, apps[2].Env = "platform/manifests", "staging"
	_, body := get(t, Handler(&liveSource{apps: apps, ledgers: []Ledger{fixtureLedger()}}, time.Second), "/")
	row := func(app string) string {
		i := strings.Index(body, `data-app="`+app+`"`)
		if i < 0 {
			t.Fatalf("no row of %s", app)
		}
		j := strings.Index(body[i:], "</tr>")
		return body[i : i+j]
	}
	if r := row(apps[0].Name); !strings.Contains(r, `<span class="badge bad chain">Rollback open</span> <span class="badge bad chain">Held</span>`) {
		t.Errorf("prod's app row: %s", r)
	}
	if r := row(apps[2].Name); strings.Contains(r, "chain") {
		t.Errorf("staging's app row: %s", r)
	}
}

// TestAProofAfterTheDeadlineIsShownAsSuch: prod's v3 proves while the
// rollback its deadline opened is still open: the stage stays "Rollback
// open" and says the proof came after the deadline, and that the
// rollback stands.
func TestAProofAfterTheDeadlineIsShownAsSuch(t *testing.T) {
	lg := fixtureLedger()
	tr := lg.Ledger.Lookup("prod", "platform/web")
	since := now.Add(-10 * time.Second)
	tr.Proven, tr.ProvenSince = tr.Pinned, &since
	env, _ := lg.Chain.Get("prod")
	s := stageView(lg, env, now)
	if s.State != "Rollback open" || !strings.Contains(s.Summary+s.Detail, "after its deadline: the rollback stands") {
		t.Errorf("stage %q: %q %q; want the rollback open, the late proof named", s.State, s.Summary, s.Detail)
	}
}

// TestStageDORA: a stage shows what the ledger tallied of DORA's keys:
// the deployments proven, the mean lead time, the failed share and the
// mean time to restore; a stage with no tally shows none.
func TestStageDORA(t *testing.T) {
	lg := fixtureLedger()
	lg.Ledger.DORA = map[string]*release.Tally{"staging": {Since: now.Add(-48 * time.Hour), Deployments: 4, Lead: 8 * time.Minute, Failures: 1, Restores: 1, Restore: 3 * time.Minute}}
	env, _ := lg.Chain.Get("staging")
	d := stageView(lg, env, now).DORA
	if d == nil || d.Deployments != 4 || d.Lead != span(2*time.Minute) || d.FailureRate != "25%" || d.Restore != span(3*time.Minute) || d.Failures != 1 {
		t.Errorf("staging's DORA %+v; want 4 deployments, a 2m lead, 25%% failed, restored in 3m", d)
	}
	if prod, _ := lg.Chain.Get("prod"); stageView(lg, prod, now).DORA != nil {
		t.Error("prod, with no tally, shows DORA figures")
	}
}
