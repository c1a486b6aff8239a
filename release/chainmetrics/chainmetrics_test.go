package chainmetrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/proofapi"
)

// TestChainMetricsMeasureTheLedger: each event ends the wait the ledger
// says began: a proof the merge's and the chain step's, a soak its soak,
// a promotion the wait after the upstream proof.
func TestChainMetricsMeasureTheLedger(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }
	const img, d1 = "web", "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	chain := release.Chain{{Name: "staging"}, {Name: "prod", From: "staging"}}
	l := release.New()
	*l.Track("staging", img) = release.Track{Proven: d1, ProvenSince: at(0)}
	*l.Track("prod", img) = release.Track{
		Proven: d1, ProvenSince: at(50 * time.Minute),
		Merged:   &release.Merge{Digest: d1, At: t0.Add(48 * time.Minute)},
		Proposal: &release.Proposal{PR: 3, Digest: d1, From: "staging"},
	}
	m := New()
	for _, e := range []release.Event{
		{At: t0.Add(10 * time.Minute), Env: "staging", Image: img, Reason: release.ReasonSoaked},
		{At: t0.Add(11 * time.Minute), Env: "prod", Image: img, Reason: release.ReasonPromotionOpened},
		{At: t0.Add(50 * time.Minute), Env: "prod", Image: img, Reason: release.ReasonProven},
		{At: t0.Add(51 * time.Minute), Env: "prod", Image: "other", Reason: release.ReasonProven}, // no track: nothing
	} {
		m.Observe("org/manifests", chain, l, e)
	}
	for _, tc := range []struct {
		name, series string
		want         string
	}{
		{"soak", "pinbot_release_soak_seconds", `pinbot_release_soak_seconds_sum{env="staging",repo="org/manifests"} 600`},
		{"upstream proof to the pull request", "pinbot_release_upstream_proof_to_promotion_seconds", `pinbot_release_upstream_proof_to_promotion_seconds_sum{env="prod",repo="org/manifests"} 660`},
		{"merge to proof", "pinbot_release_merge_to_proof_seconds", `pinbot_release_merge_to_proof_seconds_sum{env="prod",repo="org/manifests"} 120`},
		{"upstream proof to proof", "pinbot_release_upstream_proof_to_proof_seconds", `pinbot_release_upstream_proof_to_proof_seconds_sum{env="prod",repo="org/manifests"} 3000`},
	} {
		if got := exposition(t, m, tc.series); !strings.Contains(got, tc.want) {
			t.Errorf("%s: want %s in\n%s", tc.name, tc.want, got)
		}
	}

	// The gate endpoint's answers, by result.
	src := m.Answer(func(_ context.Context, q proofapi.Query) (proofapi.Answer, error) {
		switch q.Env {
		case "prod":
			return proofapi.Answer{Verified: true}, nil
		case "staging":
			return proofapi.Answer{}, nil
		case "gone":
			return proofapi.Answer{}, proofapi.ErrUnknown
		}
		return proofapi.Answer{}, errors.New("the cluster does not answer")
	})
	for _, env := range []string{"prod", "prod", "staging", "gone", "down"} {
		_, _ = src(context.Background(), proofapi.Query{Env: env})
	}
	for result, want := range map[string]float64{"verified": 2, "not_verified": 1, "unknown": 1, "error": 1} {
		if got := testutil.ToFloat64(m.answers.WithLabelValues(result)); got != want {
			t.Errorf("gate answers %s = %v, want %v", result, got, want)
		}
	}
}

// exposition is the text exposition of m's series named name.
func exposition(t *testing.T, m *Metrics, name string) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m.Collectors()...)
	var b strings.Builder
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, mm := range mf.GetMetric() {
			labels := ""
			for _, lp := range mm.GetLabel() {
				labels += lp.GetName() + "=\"" + lp.GetValue() + "\","
			}
			fmt.Fprintf(&b, "%s_sum{%s} %v\n", name, strings.TrimSuffix(labels, ","), mm.GetHistogram().GetSampleSum())
		}
	}
	return b.String()
}

// TestDORAFromProof: v2 merged into prod and proven is a deployment; it
// fails (held, rolling back to v1), which is a failed deployment, and
// a person's hold is not; the rollback to v1 proven is a deployment too,
// and restores the failure five minutes after it.
func TestDORAFromProof(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	const img = "web"
	const v1, v2 = "sha256:1111111111111111111111111111111111111111111111111111111111111111", "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	chain := release.Chain{{Name: "prod"}}
	l := release.New()
	tr := l.Track("prod", img)
	m := New()
	const repo = "org/manifests"

	*tr = release.Track{Proven: v2, Merged: &release.Merge{Digest: v2, At: t0}}
	m.Observe(repo, chain, l, release.Event{At: t0.Add(2 * time.Minute), Env: "prod", Image: img, Reason: release.ReasonProven})
	l.Holds = append(l.Holds, release.Hold{Env: "prod", From: "prod", Image: img, Digest: v2, Since: t0.Add(10 * time.Minute), RolledBackTo: v1})
	m.Observe(repo, chain, l, release.Event{At: t0.Add(10 * time.Minute), Env: "prod", Image: img, Reason: release.ReasonHeld})
	m.Observe(repo, chain, l, release.Event{At: t0.Add(11 * time.Minute), Env: "prod", Image: img, Reason: release.ReasonHeld, By: "olga", Why: "v3 leaks"})
	*tr = release.Track{Proven: v1, Merged: &release.Merge{Digest: v1, At: t0.Add(12 * time.Minute), Rollback: true}}
	m.Observe(repo, chain, l, release.Event{At: t0.Add(15 * time.Minute), Env: "prod", Image: img, Reason: release.ReasonProven})

	if got := testutil.ToFloat64(m.deployments.WithLabelValues(repo, "prod")); got != 2 {
		t.Errorf("deployments = %v, want 2 (v2 and the rollback to v1)", got)
	}
	if got := testutil.ToFloat64(m.failures.WithLabelValues(repo, "prod")); got != 1 {
		t.Errorf("failed deployments = %v, want 1 (a person's hold is none)", got)
	}
	if got := exposition(t, m, "pinbot_release_time_to_restore_seconds"); !strings.Contains(got, `pinbot_release_time_to_restore_seconds_sum{env="prod",repo="org/manifests"} 300`) {
		t.Errorf("time to restore: want 300 s in\n%s", got)
	}
	if got := exposition(t, m, "pinbot_release_merge_to_proof_seconds"); !strings.Contains(got, `_sum{env="prod",repo="org/manifests"} 300`) {
		t.Errorf("lead time (merge to proof): want 120 + 180 s in\n%s", got)
	}
}
