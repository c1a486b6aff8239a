package deployer

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/reconciler/internal/fixture"
	"pinbot.dev/pinbot/reconciler/verdict"
)

func TestRelateVerifications(t *testing.T) {
	const head, old = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	onA, onB, onD := fixture.Repo+"@"+fixture.DigestA, fixture.Repo+"@"+fixture.DigestB, fixture.Repo+"@"+fixture.DigestD
	for _, tc := range []struct {
		name     string
		kind     Kind
		ids      []string
		atHead   bool
		deployed bool // verify against the deployed revision too
		want     []string
		verified bool
		summary  string // substring of the summary
		reason   string // reason of the first container
	}{
		{name: "at head, verified", kind: ArgoCD, ids: []string{onB, onB}, atHead: true,
			want: []string{"web-new-1/app=Verified", "web-new-2/app=Verified"}, verified: true, summary: "2/2 Pods run"},
		{name: "at head, a stale Pod is a mismatch", kind: ArgoCD, ids: []string{onB, onA}, atHead: true,
			want: []string{"web-new-1/app=Verified", "web-new-2/app=Mismatch"}, summary: "Mismatch: pod web-new-2"},
		{name: "behind, running the deployed digest is pending", kind: ArgoCD, ids: []string{onA, onA}, deployed: true,
			want: []string{"web-new-1/app=Pending", "web-new-2/app=Pending"}, summary: "Argo CD has not synced " + head + " yet",
			reason: "Argo CD has not synced " + head + " yet"},
		{name: "Flux behind", kind: Flux, ids: []string{onA}, deployed: true,
			want: []string{"web-new-1/app=Pending"}, summary: "Flux has not applied " + head + " yet"},
		{name: "behind, running neither is a mismatch", kind: ArgoCD, ids: []string{onA, onD}, deployed: true,
			want: []string{"web-new-1/app=Pending", "web-new-2/app=Mismatch"}, summary: "Mismatch: pod web-new-2"},
		{name: "behind, the deployed render unknown", kind: ArgoCD, ids: []string{onA},
			want: []string{"web-new-1/app=Mismatch"}},
		{name: "behind, already running the head's digest, still not verified", kind: ArgoCD, ids: []string{onB, onB}, deployed: true,
			want: []string{"web-new-1/app=Verified", "web-new-2/app=Verified"}, summary: "Argo CD has not synced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs, ds := fixture.Behind(tc.ids...)
			var vd *verdict.Verification
			if tc.deployed {
				vd = verdict.Verify("web", old, ds)
			}
			v := RelateVerifications(tc.kind, head, tc.atHead, verdict.Verify("web", head, hs), vd)
			if diff := cmp.Diff(tc.want, fixture.Verdicts(v.Containers)); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			if v.Verified != tc.verified {
				t.Errorf("Verified = %t, want %t (%s)", v.Verified, tc.verified, v.Summary())
			}
			if !strings.Contains(v.Summary(), tc.summary) {
				t.Errorf("Summary %q does not contain %q", v.Summary(), tc.summary)
			}
			if tc.reason != "" && v.Containers[0].Reason != tc.reason {
				t.Errorf("reason %q, want %q", v.Containers[0].Reason, tc.reason)
			}
			if v.Commit != head {
				t.Errorf("commit %s, want the head %s", v.Commit, head)
			}
		})
	}
}

func TestDeployerHealth(t *testing.T) {
	for _, tc := range []struct {
		in   Health
		want verdict.Health
	}{
		{Health{Status: "Healthy", Reason: "Argo CD's operation is still Running"}, verdict.HealthUnknown},
		{Health{Status: "Healthy", Counts: true, Healthy: true}, verdict.Healthy},
		{Health{Status: "Progressing", Counts: true}, verdict.Progressing},
		{Health{Status: "Degraded", Counts: true}, verdict.Degraded},
		{Health{Status: "NotReady", Counts: true}, verdict.Degraded},
		{Health{Status: "Suspended", Counts: true}, verdict.HealthUnknown},
	} {
		if got := tc.in.Report(); got.Health != tc.want || got.Reason != tc.in.Reason {
			t.Errorf("%+v.Report() = %+v, want %s with its reason", tc.in, got, tc.want)
		}
	}
}
