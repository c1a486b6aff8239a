package waves

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/clusters"
)

const (
	img = "registry.example/org/web"
	dA  = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	dB  = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

var t0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// declared is staging, then prod over four clusters in three waves
// (canary, quarter, rest), then a dr environment that comes from prod.
func declared() release.Chain {
	return release.Chain{
		{Name: "staging", Paths: []string{"envs/staging/**"}, Apps: []string{"web-staging"}},
		{Name: "prod", From: "staging", Soak: time.Hour, ReadyTimeout: 2 * time.Minute, Waves: []release.Wave{
			{Name: "canary", Paths: []string{"envs/prod/eu-1/**"}, Apps: []string{"web-eu-1"}, Soak: 30 * time.Minute},
			{Name: "quarter", Paths: []string{"envs/prod/eu-2/**"}, Apps: []string{"web-eu-2"}, Soak: 10 * time.Minute},
			{Name: "rest", Paths: []string{"envs/prod/us-1/**", "envs/prod/us-2/**"}, Apps: []string{"web-us-1", "web-us-2"}},
		}},
		{Name: "dr", From: "prod", Paths: []string{"envs/dr/**"}, Apps: []string{"web-dr"}},
	}
}

// TestExpandMakesEachWaveAnEnvironment: each wave is an environment of
// its own, coming from the wave before it, with its own files, apps and
// soak (the last wave's the environment's); what came from prod comes
// from prod's last wave; only the first wave takes from upstream.
func TestExpandMakesEachWaveAnEnvironment(t *testing.T) {
	c := declared()
	c[1].RequireAttestation, c[1].AttestationKeys = true, []string{"keys/staging.pub"}
	got := Expand(c)
	type row struct {
		Name, From, Of, Wave, Paths, Apps string
		Soak                              time.Duration
		Attested                          bool
	}
	var rows []row
	for _, e := range got {
		rows = append(rows, row{e.Name, e.From, e.Of, e.Wave, strings.Join(e.Paths, ","), strings.Join(e.Apps, ","), e.Soak, e.RequireAttestation})
	}
	want := []row{
		{"staging", "", "", "", "envs/staging/**", "web-staging", 0, false},
		{"prod.canary", "staging", "prod", "canary", "envs/prod/eu-1/**", "web-eu-1", 30 * time.Minute, true},
		{"prod.quarter", "prod.canary", "prod", "quarter", "envs/prod/eu-2/**", "web-eu-2", 10 * time.Minute, false},
		{"prod.rest", "prod.quarter", "prod", "rest", "envs/prod/us-1/**,envs/prod/us-2/**", "web-us-1,web-us-2", time.Hour, false},
		{"dr", "prod.rest", "", "", "envs/dr/**", "web-dr", 0, false},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("expanded (-want +got):\n%s", diff)
	}
	if len(c[1].Waves) != 3 || c[2].From != "prod" {
		t.Error("Expand changed the chain it was given")
	}
	if probs := got.Validate(func(s string) bool { return s != "" }, func(string) error { return nil }); len(probs) > 0 {
		t.Errorf("the expanded chain does not validate: %+v", probs)
	}
}

// placed is declared with prod's waves over clusters: the environment's
// apps, each wave on its own clusters, the quarter with maxUnproven.
func placed(c release.Chain, maxUnproven clusters.Share) release.Chain {
	c[1].Apps = []string{"web-prod"}
	for i, cs := range [][]string{{"eu-1"}, {"eu-2", "eu-3"}, {"us-1", "us-2"}} {
		c[1].Waves[i].Apps, c[1].Waves[i].Clusters = nil, cs
	}
	c[1].Waves[1].MaxUnproven = maxUnproven
	return c
}

// TestExpandPlacedWaves: a wave that names its clusters takes the
// environment's apps, and carries its placement; Validate finds nothing
// wrong with it.
func TestExpandPlacedWaves(t *testing.T) {
	c := placed(declared(), "50%")
	c[1].Waves[2].Clusters, c[1].Waves[2].Selector = nil, map[string]string{"region": "us"}
	if probs := Validate(c, func(s string) bool { return s != "" }); len(probs) > 0 {
		t.Fatalf("placed waves: %+v", probs)
	}
	got := Expand(c)
	for i, want := range []clusters.Placement{{Clusters: []string{"eu-1"}}, {Clusters: []string{"eu-2", "eu-3"}, MaxUnproven: "50%"}, {Selector: map[string]string{"region": "us"}}} {
		e := got[i+1]
		if diff := cmp.Diff(want, e.Placement); diff != "" || !slices.Equal(e.Apps, []string{"web-prod"}) {
			t.Errorf("%s: apps %q, want the environment's; placement (-want +got):\n%s", e.Name, e.Apps, diff)
		}
	}
}

// TestBadWaves: every wave list that cannot roll out is refused, naming
// the environment and the wave; overlapping wave paths are refused by the
// expanded chain's own check.
func TestBadWaves(t *testing.T) {
	valid := func(s string) bool { return s != "" && !strings.ContainsAny(s, " /%") }
	for _, tc := range []struct {
		name string
		edit func(c release.Chain) release.Chain
		want string
	}{
		{"one wave", func(c release.Chain) release.Chain { c[1].Waves = c[1].Waves[:1]; return c }, `environment "prod" has one wave`},
		{"empty wave", func(c release.Chain) release.Chain { c[1].Waves[1].Apps = nil; return c }, `wave "quarter" is empty`},
		{"paths beside waves", func(c release.Chain) release.Chain { c[1].Paths = []string{"envs/prod/**"}; return c }, `its paths and apps are its waves'`},
		{"named twice", func(c release.Chain) release.Chain { c[1].Waves[2].Name = "canary"; return c }, `wave "canary" named twice`},
		{"bad name", func(c release.Chain) release.Chain { c[1].Waves[0].Name = "25%"; return c }, `wave 1's name "25%"`},
		{"name taken", func(c release.Chain) release.Chain {
			return append(c, release.Environment{Name: "prod.rest", Paths: []string{"x/**"}, Apps: []string{"x"}})
		}, `wave "rest" is environment "prod.rest", which is declared too`},
		{"negative soak", func(c release.Chain) release.Chain { c[1].Waves[0].Soak = -time.Second; return c }, `wave "canary": soak must not be negative`},
		{"apps beside waves without clusters", func(c release.Chain) release.Chain { c[1].Apps = []string{"web"}; return c }, `apps beside waves only when every wave names its clusters`},
		{"maxUnproven over 100%", func(c release.Chain) release.Chain { return placed(c, "101%") }, `wave "quarter": maxUnproven "101%": over 100%`},
		{"maxUnproven no count", func(c release.Chain) release.Chain { return placed(c, "one") }, `wave "quarter": maxUnproven "one": want a count or a percentage`},
		{"maxUnproven tolerating every cluster", func(c release.Chain) release.Chain { return placed(c, "2") }, `maxUnproven 2 tolerates every one of its 2 clusters`},
		{"maxUnproven without clusters", func(c release.Chain) release.Chain { c[1].Waves[0].MaxUnproven = "1"; return c }, `wave "canary": maxUnproven needs the wave's clusters`},
		{"one cluster for every wave", func(c release.Chain) release.Chain {
			c = placed(c, "")
			for i := range c[1].Waves {
				c[1].Waves[i].Clusters = []string{"eu-1"}
			}
			return c
		}, `every wave names cluster "eu-1" alone`},
		{"a cluster named twice", func(c release.Chain) release.Chain {
			c = placed(c, "")
			c[1].Waves[2].Clusters = []string{"us-1", "us-1"}
			return c
		}, `wave "rest": cluster "us-1" named twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range Validate(tc.edit(declared()), valid) {
				got = append(got, p.Msg)
			}
			if !slices.ContainsFunc(got, func(m string) bool { return strings.Contains(m, tc.want) }) {
				t.Errorf("problems %q; want one saying %q", got, tc.want)
			}
		})
	}
	c := declared()
	c[1].Waves[1].Paths = []string{"envs/prod/**"}
	var got []string
	for _, p := range Expand(c).Validate(valid, func(string) error { return nil }) {
		got = append(got, p.Msg)
	}
	if !slices.ContainsFunc(got, func(m string) bool {
		return strings.Contains(m, `environment "prod.quarter"'s path "envs/prod/**" overlaps environment "prod.canary"'s "envs/prod/eu-1/**"`)
	}) {
		t.Errorf("overlapping waves: %q; want the overlap named", got)
	}
}

// world is what Git pins and what each environment shows of img.
type world struct{ pinned, proven map[string]string }

func (w world) input(c release.Chain, now time.Time, broken map[string]string) release.Input {
	in := release.Input{Now: now, Chain: c, Pinned: map[string]map[string]string{}, Assessed: map[string]map[string]release.Assessment{}}
	for env, d := range w.pinned {
		in.Pinned[env] = map[string]string{img: d}
		a := release.Assessment{Image: img, Digest: d, Proven: true, Pods: []release.Pod{{App: env, Namespace: "web", Pod: "web-1", Container: "app", Running: d, Verdict: "Verified", Ready: true}}}
		if why, bad := broken[env]; bad {
			a = release.Assessment{Image: img, Digest: d, Why: why}
		}
		in.Assessed[env] = map[string]release.Assessment{img: a}
	}
	return in
}

func promotions(as []release.Action) []string {
	var out []string
	for _, a := range as {
		if a.Kind == release.Promote || a.Kind == release.Rollback {
			out = append(out, string(a.Kind)+" "+a.Env+" "+a.Digest[7:8])
		}
	}
	return out
}

// TestWavesRollOutOneAfterAnother: B proven in staging goes to the canary
// alone; the quarter's pull request opens once the canary proves B, and
// its gate turns green only after the canary's soak; a pause of prod
// holds every wave. When B breaks in the quarter (a stale node), the
// rollback opens for the quarter's files alone and B is held in the
// quarter, the rest and dr, not in the canary, where it proved.
func TestWavesRollOutOneAfterAnother(t *testing.T) {
	c := Expand(declared())
	c.Defaults()
	l := release.New()
	w := world{pinned: map[string]string{"staging": dA, "prod.canary": dA, "prod.quarter": dA, "prod.rest": dA, "dr": dA}}
	release.Step(l, w.input(c, t0, nil))
	w.pinned["staging"] = dB
	as := release.Step(l, w.input(c, t0.Add(time.Minute), nil))
	if got := promotions(as); !slices.Equal(got, []string{"promote prod.canary b"}) {
		t.Fatalf("B proven in staging: %q; want the canary alone proposed", got)
	}
	l.Proposed("prod.canary", img, release.Proposal{PR: 1, Digest: dB, Head: "h1", From: "staging"})
	w.pinned["prod.canary"] = dB // merged
	release.Step(l, w.input(c, t0.Add(2*time.Minute), nil))
	as = release.Step(l, w.input(c, t0.Add(3*time.Minute), nil))
	if got := promotions(as); !slices.Equal(got, []string{"promote prod.quarter b"}) {
		t.Fatalf("B proven in the canary: %q; want the quarter proposed, and nothing into the rest", got)
	}
	l.Proposed("prod.quarter", img, release.Proposal{PR: 2, Digest: dB, Head: "h2", From: "prod.canary"})
	gate := func(at time.Duration) *release.Action {
		for _, a := range release.Step(l, w.input(c, t0.Add(at), nil)) {
			if a.Kind == release.Gate && a.Env == "prod.quarter" {
				l.Posted(a.Env, img, a.PR, a.State, a.Description)
				return &a
			}
		}
		return nil
	}
	if g := gate(10 * time.Minute); g == nil || g.State != commitstatus.Pending || !strings.Contains(g.Description, "proven in prod.canary, soaking until") {
		t.Fatalf("during the canary's soak: gate %+v; want pending on the canary's soak", g)
	}
	l.PauseBy("prod", "olga", "an incident in eu-2", t0.Add(20*time.Minute))
	if g := gate(35 * time.Minute); g == nil || g.State != commitstatus.Pending || !strings.Contains(g.Description, "paused by olga") {
		t.Fatalf("prod paused: gate %+v; want the quarter's gate held by the pause", g)
	}
	l.ResumeBy("prod", "olga", "resolved", t0.Add(36*time.Minute))
	if g := gate(37 * time.Minute); g == nil || g.State != commitstatus.Success {
		t.Fatalf("after the canary's soak: gate %+v; want green", g)
	}
	w.pinned["prod.quarter"] = dB // merged
	release.Step(l, w.input(c, t0.Add(38*time.Minute), nil))
	stale := map[string]string{"prod.quarter": "pod web/web-1 container app is Mismatch: running sha256:aa…"}
	release.Step(l, w.input(c, t0.Add(39*time.Minute), stale))
	as = release.Step(l, w.input(c, t0.Add(42*time.Minute), stale))
	if got := promotions(as); !slices.Equal(got, []string{"rollback prod.quarter a"}) {
		t.Fatalf("B broke in the quarter: %q; want the quarter alone rolled back to A", got)
	}
	for env, want := range map[string]bool{"prod.canary": false, "prod.quarter": true, "prod.rest": true, "dr": true} {
		if held := l.Held(env, img, dB) != nil; held != want {
			t.Errorf("B held in %s: %v, want %v", env, held, want)
		}
	}
}

// TestAChangeOfWavesIsAChainChange: the insider's moves on waves in her
// own pull request's .pinbot.yaml are changes of the release chain, which
// fail its gate until someone who may write the ledger approves the head:
// a path moved out of the canary into a later wave, the waves collapsed
// into one environment, a wave's soak cut, a wave dropped.
func TestAChangeOfWavesIsAChainChange(t *testing.T) {
	base := Expand(declared())
	for _, tc := range []struct {
		name string
		edit func(c release.Chain) release.Chain
		want string
	}{
		{"a path moved to a later wave", func(c release.Chain) release.Chain {
			c[1].Waves[2].Paths = append(c[1].Waves[2].Paths, c[1].Waves[0].Paths...)
			c[1].Waves[0].Paths = []string{"envs/prod/none/**"}
			return c
		}, "changes the settings of prod.canary"},
		{"the waves collapsed", func(c release.Chain) release.Chain {
			c[1].Waves, c[1].Paths, c[1].Apps = nil, []string{"envs/prod/**"}, []string{"web-eu-1"}
			return c
		}, "adds prod and removes prod.canary, prod.quarter, prod.rest"},
		{"a soak cut", func(c release.Chain) release.Chain { c[1].Waves[0].Soak = 0; return c }, "changes the settings of prod.canary"},
		{"a wave dropped", func(c release.Chain) release.Chain { c[1].Waves = c[1].Waves[1:]; return c }, "removes prod.canary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := release.ChainChange(base, Expand(tc.edit(declared()))); !strings.Contains(got, tc.want) {
				t.Errorf("ChainChange = %q, want it to say %q", got, tc.want)
			}
		})
	}
	// On waves over clusters: a cluster moved out of the canary, a
	// maxUnproven raised, the earlier waves' rollback turned off.
	for _, tc := range []struct {
		name string
		edit func(c release.Chain) release.Chain
		want string
	}{
		{"a cluster moved to a later wave", func(c release.Chain) release.Chain {
			c[1].Waves[0].Clusters, c[1].Waves[2].Clusters = []string{"us-3"}, []string{"us-1", "us-2", "eu-1"}
			return c
		}, "changes the settings of prod.canary"},
		{"maxUnproven raised", func(c release.Chain) release.Chain { c[1].Waves[1].MaxUnproven = "1"; return c }, "changes the settings of prod.quarter"},
		{"earlier waves kept", func(c release.Chain) release.Chain { c[1].RollbackEarlierWaves = false; return c }, "changes the settings of prod.canary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := placed(declared(), "0")
			c[1].RollbackEarlierWaves = true
			if got := release.ChainChange(Expand(c), Expand(tc.edit(c))); !strings.Contains(got, tc.want) {
				t.Errorf("ChainChange = %q, want it to say %q", got, tc.want)
			}
		})
	}
	if got := release.ChainChange(base, Expand(declared())); got != "" {
		t.Errorf("the same waves: ChainChange = %q, want none", got)
	}
}

// TestEarlierWavesRollBackWhenTheEnvironmentSaysSo: with
// rollbackEarlierWaves, B failing in the quarter rolls back the canary,
// where B proved, as well as the quarter, and holds B in both.
func TestEarlierWavesRollBackWhenTheEnvironmentSaysSo(t *testing.T) {
	d := declared()
	d[1].RollbackEarlierWaves = true
	c := Expand(d)
	c.Defaults()
	l := release.New()
	w := world{pinned: map[string]string{"staging": dA, "prod.canary": dA, "prod.quarter": dA, "prod.rest": dA, "dr": dA}}
	release.Step(l, w.input(c, t0, nil))
	w.pinned["staging"], w.pinned["prod.canary"] = dB, dB
	release.Step(l, w.input(c, t0.Add(time.Minute), nil))
	w.pinned["prod.quarter"] = dB
	release.Step(l, w.input(c, t0.Add(40*time.Minute), nil))
	stale := map[string]string{"prod.quarter": "pod web/web-1 container app is Mismatch: running sha256:aa…"}
	release.Step(l, w.input(c, t0.Add(41*time.Minute), stale))
	as := release.Step(l, w.input(c, t0.Add(44*time.Minute), stale))
	if got := promotions(as); !slices.Equal(got, []string{"rollback prod.quarter a", "rollback prod.canary a"}) {
		t.Fatalf("B broke in the quarter: %q; want the quarter and the canary rolled back to A", got)
	}
	for env, want := range map[string]bool{"staging": false, "prod.canary": true, "prod.quarter": true, "prod.rest": true, "dr": true} {
		if held := l.Held(env, img, dB) != nil; held != want {
			t.Errorf("B held in %s: %v, want %v", env, held, want)
		}
	}
	if tr := l.Lookup("prod.canary", img); tr.Rollback == nil || !strings.Contains(tr.Rollback.Evidence, "wave quarter failed: ") {
		t.Errorf("the canary's rollback: %+v; want its evidence to name the quarter's failure", tr.Rollback)
	}
}

// TestClustersProvenSince: the ledger keeps since when each cluster of a
// placed wave proves the pinned digest; a cluster whose proof breaks
// starts again, and a new digest starts them all.
func TestClustersProvenSince(t *testing.T) {
	c := release.Chain{{Name: "prod", Paths: []string{"envs/**"}, Apps: []string{"web"}, Placement: clusters.Placement{Clusters: []string{"eu-1", "eu-2"}, MaxUnproven: "1"}}}
	c.Defaults()
	l := release.New()
	look := func(at time.Duration, digest string, eu2 bool) map[string]string {
		in := release.Input{Now: t0.Add(at), Chain: c, Pinned: map[string]map[string]string{"prod": {img: digest}}}
		a := release.Assessment{Image: img, Digest: digest, Proven: true, Clusters: []release.ClusterProof{{Cluster: "eu-1", Proven: true}, {Cluster: "eu-2", Proven: eu2, Why: "not Ready"}}}
		in.Assessed = map[string]map[string]release.Assessment{"prod": {img: a}}
		release.Step(l, in)
		out := map[string]string{}
		for _, cp := range l.Lookup("prod", img).Clusters {
			out[cp.Cluster] = "unproven: " + cp.Why
			if cp.Since != nil {
				out[cp.Cluster] = cp.Since.Sub(t0).String()
			}
		}
		return out
	}
	for _, step := range []struct {
		at     time.Duration
		digest string
		eu2    bool
		want   map[string]string
	}{
		{0, dA, true, map[string]string{"eu-1": "0s", "eu-2": "0s"}},
		{time.Minute, dA, false, map[string]string{"eu-1": "0s", "eu-2": "unproven: not Ready"}},
		{2 * time.Minute, dA, true, map[string]string{"eu-1": "0s", "eu-2": "2m0s"}},
		{3 * time.Minute, dB, true, map[string]string{"eu-1": "3m0s", "eu-2": "3m0s"}},
	} {
		if diff := cmp.Diff(step.want, look(step.at, step.digest, step.eu2)); diff != "" {
			t.Errorf("at %s (-want +got):\n%s", step.at, diff)
		}
	}
}
