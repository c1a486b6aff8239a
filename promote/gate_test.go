package promote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/promote/pr"
	"pinbot.dev/pinbot/release"
)

// ledgerGate is a Gate over a ledger held in memory, as serve's and the
// CLI's read one from the cluster.
type ledgerGate struct{ l *release.Ledger }

func (g ledgerGate) Admit(_ context.Context, a release.Admission) error {
	return release.Admit(a, release.FactsFrom(g.l, a, time.Now()))
}

// TestNothingWalksAroundTheGate: a promotion into an environment of the
// release chain is refused without a gate, forced or not, and into the
// first environment too; with a gate, a digest still soaking upstream is
// refused, and --force waives the upstream proof and its soak but never a
// hold; drift proposes nothing into an environment without a
// gate. Nothing is pushed or opened for a refused promotion.
func TestNothingWalksAroundTheGate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	app := f.image("app")
	v1 := f.pushImage(app, "v1", time.Time{})
	f.chainRepo(`environments:
  - name: staging
    paths: ["envs/staging/**"]
    apps: [web-staging]
    soak: 30m
  - name: prod
    from: staging
    paths: ["envs/prod/**"]
    apps: [web-prod]
`, app, v1)
	v2 := f.pushImage(app, "v2", time.Time{})
	in := []Input{{Image: app, Tags: []string{"v2"}, Digest: v2, Source: pr.SourceFlag}}
	held := release.New()
	held.Holds = append(held.Holds, release.Hold{Env: "prod", Image: app, Digest: v2, Reason: "crash loop", Since: time.Now().Add(-time.Hour)},
		release.Hold{Env: "staging", Image: app, Digest: v2, Reason: "crash loop", Since: time.Now().Add(-time.Hour)})
	soaking := release.New()
	st := soaking.Track("staging", app)
	since := time.Now().Add(-5 * time.Minute)
	st.Pinned, st.Proven, st.ProvenSince = v2, v2, &since

	for _, tc := range []struct {
		name string
		req  Request
		want error // errors.Is, or errors.As a *release.Refusal when nil
		rule string
	}{
		{name: "forced into prod without a gate", req: Request{Inputs: in, Target: "prod", Force: true, Reason: "hotfix"}, want: ErrNoGate},
		{name: "into the first environment without a gate", req: Request{Inputs: in}, want: ErrNoGate},
		{name: "forced into prod, held there", req: Request{Inputs: in, Target: "prod", Force: true, Reason: "hotfix", Admitter: ledgerGate{held}}, rule: release.RuleHeld},
		{name: "into the first environment, held there", req: Request{Inputs: in, Admitter: ledgerGate{held}}, rule: release.RuleHeld},
		{name: "into prod, not proven in staging", req: Request{Inputs: in, Target: "prod", Admitter: ledgerGate{release.New()}}, rule: release.RuleNotProven},
		{name: "into prod, proven in staging, still soaking", req: Request{Inputs: in, Target: "prod", Admitter: ledgerGate{soaking}}, rule: release.RuleSoaking},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(ctx, f.env(), tc.req)
			var refusal *release.Refusal
			switch {
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("Run = %v, want %v", err, tc.want)
			case tc.want == nil && (!errors.As(err, &refusal) || refusal.Rule != tc.rule):
				t.Errorf("Run = %v, want the release chain's refusal %q", err, tc.rule)
			}
			if pulls := f.openPulls(); len(pulls) != 0 {
				t.Errorf("%d pull requests opened for a refused promotion", len(pulls))
			}
		})
	}
	// Forced past the proof with a gate and no hold: the prod pull
	// request opens, saying so.
	res, err := Run(ctx, f.env(), Request{Inputs: in, Target: "prod", Force: true, Reason: "hotfix", Admitter: ledgerGate{release.New()}})
	if err != nil || len(res) != 1 || res[0].Pull == nil {
		t.Fatalf("forced with a gate: %v, %+v; want the prod pull request", err, res)
	}
}

// TestForcedPromotionNeverRidesOnTheOnwardPullRequest: with pinbot's
// onward pull request of a proven digest open into prod, a forced
// promotion of an unproven one opens its own pull request on its own
// branch. The onward pull request keeps its head, so what the ledger and
// the release page say of it (proven in staging) stays true.
func TestForcedPromotionNeverRidesOnTheOnwardPullRequest(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	app := f.image("app")
	v1 := f.pushImage(app, "v1", time.Time{})
	f.chainRepo(`environments:
  - name: staging
    paths: ["envs/staging/**"]
    apps: [web-staging]
  - name: prod
    from: staging
    paths: ["envs/prod/**"]
    apps: [web-prod]
`, app, v1)
	proven := f.pushImage(app, "1.3.0", time.Time{})
	hotfix := f.pushImage(app, "1.4.0", time.Time{})
	l := release.New()
	st := l.Track("staging", app)
	since := time.Now().Add(-time.Hour)
	st.Pinned, st.Proven, st.ProvenSince = proven, proven, &since
	onward, err := Run(ctx, f.env(), Request{Target: "prod", Admitter: ledgerGate{l},
		Inputs: []Input{{Image: app, Tags: []string{"1.3.0"}, Digest: proven, Source: pr.SourceProof}}})
	if err != nil || len(onward) != 1 || onward[0].Status != StatusOpened {
		t.Fatalf("the onward promotion: %v, %+v", err, onward)
	}
	forced, err := Run(ctx, f.env(), Request{Target: "prod", Force: true, Reason: "hotfix for INC-7", Admitter: ledgerGate{l},
		Inputs: []Input{{Image: app, Tags: []string{"1.4.0"}, Digest: hotfix, Source: pr.SourceFlag}}})
	if err != nil || len(forced) != 1 || forced[0].Status != StatusOpened || forced[0].Pull == nil {
		t.Fatalf("the forced promotion: %v, %+v; want its own pull request opened", err, forced)
	}
	if want := pr.ForcedBranch("pinbot/", "prod", app); forced[0].Branch != want {
		t.Errorf("the forced promotion is on %s, want %s", forced[0].Branch, want)
	}
	if forced[0].Pull.Number == onward[0].Pull.Number {
		t.Fatalf("the forced promotion rewrote the onward pull request #%d", onward[0].Pull.Number)
	}
	still, err := f.forge.GetPull(ctx, f.repo, onward[0].Pull.Number)
	if err != nil {
		t.Fatal(err)
	}
	if still.State != "open" || still.HeadSHA != onward[0].Meta.Head {
		t.Errorf("the onward pull request is %s at %s, want open at %s", still.State, still.HeadSHA, onward[0].Meta.Head)
	}
	if got := f.file(onward[0].Branch, "envs/prod/web.yaml"); !strings.Contains(got, proven) {
		t.Errorf("the onward branch pins %q, want the proven %s", got, proven)
	}
	if !strings.Contains(forced[0].Pull.Body, "hotfix for INC-7") {
		t.Errorf("the forced pull request's body does not give the reason:\n%s", forced[0].Pull.Body)
	}
}

// TestOverlappingEnvironmentsAreRefused: a chain whose environments share
// files (staging's envs/** holds prod's envs/prod/**) would let a staging
// promotion rewrite prod past its proof and holds. The repository's
// .pinbot.yaml is refused, naming the file and line, and nothing is
// pushed or opened, forced or not.
func TestOverlappingEnvironmentsAreRefused(t *testing.T) {
	f := newFixture(t)
	app := f.image("app")
	v1 := f.pushImage(app, "v1", time.Time{})
	f.chainRepo(`environments:
  - name: staging
    paths: ["envs/**"]
    apps: [web-staging]
  - name: prod
    from: staging
    paths: ["envs/prod/**"]
    apps: [web-prod]
`, app, v1)
	v2 := f.pushImage(app, "v2", time.Time{})
	in := []Input{{Image: app, Tags: []string{"v2"}, Digest: v2, Source: pr.SourceFlag}}
	for _, req := range []Request{
		{Inputs: in, Admitter: ledgerGate{release.New()}},
		{Inputs: in, Target: "prod", Force: true, Reason: "hotfix", Admitter: ledgerGate{release.New()}},
	} {
		_, err := Run(context.Background(), f.env(), req)
		if err == nil || !strings.Contains(err.Error(), ".pinbot.yaml:7:") || !strings.Contains(err.Error(), `overlaps environment "staging"'s "envs/**"`) {
			t.Errorf("Run into %q = %v, want the overlap refused at .pinbot.yaml:7", req.Target, err)
		}
	}
	if pulls, branches := f.openPulls(), f.branches(); len(pulls) != 0 || len(branches) != 1 {
		t.Errorf("a refused chain left %d pull requests and branches %q", len(pulls), branches)
	}
}

// chainRepo creates the repository of a staging and a prod environment
// whose .pinbot.yaml is config, each pinning app at v1.
func (f *fixture) chainRepo(config, app, v1 string) {
	f.t.Helper()
	f.createRepo(map[string]string{
		".pinbot.yaml":          config,
		"envs/staging/web.yaml": fmt.Sprintf("image: %s:v1@%s\n", app, v1),
		"envs/prod/web.yaml":    fmt.Sprintf("image: %s:v1@%s\n", app, v1),
	})
}
