package reconciler

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/deployer"
)

// behindSnapshots are Deployment web's Pods (rolledOut) judged against a
// head that pins digestB and a deployed revision that pins digestA.
func behindSnapshots(ids ...string) (head, deployed *Snapshot) {
	head = withLookups(rolledOut(ids...), Lookups{{Kind: LookupChild, Ref: repo + "@" + digestB, Platform: amd64}: {}})
	deployed = rolledOut(ids...)
	deployed.Desired = []*unstructured.Unstructured{gitDeployment("web", repo+":v1@"+digestA)}
	deployed.Lookups = Lookups{{Kind: LookupChild, Ref: repo + "@" + digestA, Platform: amd64}: {}}
	return head, deployed
}

func TestRelateVerifications(t *testing.T) {
	const head, old = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	onA, onB, onD := repo+"@"+digestA, repo+"@"+digestB, repo+"@"+digestD
	for _, tc := range []struct {
		name     string
		kind     deployer.Kind
		ids      []string
		atHead   bool
		deployed bool // verify against the deployed revision too
		want     []string
		verified bool
		summary  string // substring of the summary
		reason   string // reason of the first container
	}{
		{name: "at head, verified", kind: deployer.ArgoCD, ids: []string{onB, onB}, atHead: true,
			want: []string{"web-new-1/app=Verified", "web-new-2/app=Verified"}, verified: true, summary: "2/2 Pods run"},
		{name: "at head, a stale Pod is a mismatch", kind: deployer.ArgoCD, ids: []string{onB, onA}, atHead: true,
			want: []string{"web-new-1/app=Verified", "web-new-2/app=Mismatch"}, summary: "Mismatch: pod web-new-2"},
		{name: "behind, running the deployed digest is pending", kind: deployer.ArgoCD, ids: []string{onA, onA}, deployed: true,
			want: []string{"web-new-1/app=Pending", "web-new-2/app=Pending"}, summary: "Argo CD has not synced " + head + " yet",
			reason: "Argo CD has not synced " + head + " yet"},
		{name: "Flux behind", kind: deployer.Flux, ids: []string{onA}, deployed: true,
			want: []string{"web-new-1/app=Pending"}, summary: "Flux has not applied " + head + " yet"},
		{name: "behind, running neither is a mismatch", kind: deployer.ArgoCD, ids: []string{onA, onD}, deployed: true,
			want: []string{"web-new-1/app=Pending", "web-new-2/app=Mismatch"}, summary: "Mismatch: pod web-new-2"},
		{name: "behind, the deployed render unknown", kind: deployer.ArgoCD, ids: []string{onA},
			want: []string{"web-new-1/app=Mismatch"}},
		{name: "behind, already running the head's digest, still not verified", kind: deployer.ArgoCD, ids: []string{onB, onB}, deployed: true,
			want: []string{"web-new-1/app=Verified", "web-new-2/app=Verified"}, summary: "Argo CD has not synced"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs, ds := behindSnapshots(tc.ids...)
			var vd *Verification
			if tc.deployed {
				vd = Verify("web", old, ds)
			}
			v := relateVerifications(tc.kind, head, tc.atHead, Verify("web", head, hs), vd)
			if diff := cmp.Diff(tc.want, verdicts(v.Containers)); diff != "" {
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

func TestObservedReport(t *testing.T) {
	now := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	hs, ds := behindSnapshots(repo+"@"+digestA, repo+"@"+digestA)
	const head = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	pending := relateVerifications(deployer.ArgoCD, head, false, Verify("web", head, hs), Verify("web", "a", ds))
	verified := relateVerifications(deployer.ArgoCD, head, true, Verify("web", head, rolledOut(repo+"@"+digestB, repo+"@"+digestB)), nil)
	mismatch := relateVerifications(deployer.ArgoCD, head, true, Verify("web", head, hs), nil)
	for _, tc := range []struct {
		name        string
		e           Entry
		v           *Verification
		state       string
		comment     bool
		wantVerfied bool
	}{
		{name: "behind is pending", v: pending, state: statePending},
		{name: "pending once", e: Entry{Reported: statePending}, v: pending, state: ""},
		{name: "verified is success and a comment", e: Entry{Reported: statePending}, v: verified, state: stateSuccess, comment: true, wantVerfied: true},
		{name: "verified again posts nothing", e: Entry{Reported: stateSuccess, Verified: true, Commented: true}, v: verified, wantVerfied: true},
		{name: "a restart after success stays success", e: Entry{Reported: stateSuccess, Verified: true, Commented: true}, v: pending, wantVerfied: true},
		{name: "a mismatch is failure", e: Entry{Reported: stateSuccess, Verified: true, Commented: true}, v: mismatch, state: stateFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.e.Commit, tc.e.Result = head, Observed
			s := observedReport(tc.e, tc.v, now)
			if s.state != tc.state || s.comment != tc.comment {
				t.Errorf("state %q comment %t, want %q %t (desc %q)", s.state, s.comment, tc.state, tc.comment, s.desc)
			}
			if s.entry.Verified != tc.wantVerfied || s.entry.Summary != tc.v.Summary() {
				t.Errorf("entry verified %t summary %q, want %t %q", s.entry.Verified, s.entry.Summary, tc.wantVerfied, tc.v.Summary())
			}
		})
	}
}

func TestDeployerHealth(t *testing.T) {
	for _, tc := range []struct {
		in   deployer.Health
		want Health
	}{
		{deployer.Health{Status: "Healthy", Reason: "Argo CD's operation is still Running"}, HealthUnknown},
		{deployer.Health{Status: "Healthy", Counts: true, Healthy: true}, Healthy},
		{deployer.Health{Status: "Progressing", Counts: true}, Progressing},
		{deployer.Health{Status: "Degraded", Counts: true}, Degraded},
		{deployer.Health{Status: "NotReady", Counts: true}, Degraded},
		{deployer.Health{Status: "Suspended", Counts: true}, HealthUnknown},
	} {
		if got := deployerHealth(tc.in); got.Health != tc.want || got.Reason != tc.in.Reason {
			t.Errorf("deployerHealth(%+v) = %+v, want %s with its reason", tc.in, got, tc.want)
		}
	}
}
