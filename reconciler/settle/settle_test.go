package settle

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/internal/fixture"
	"pinbot.dev/pinbot/reconciler/verdict"
)

func TestObservedReport(t *testing.T) {
	now := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	hs, ds := fixture.Behind(fixture.Repo+"@"+fixture.DigestA, fixture.Repo+"@"+fixture.DigestA)
	const head = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	pending := deployer.RelateVerifications(deployer.ArgoCD, head, false, verdict.Verify("web", head, hs), verdict.Verify("web", "a", ds))
	verified := deployer.RelateVerifications(deployer.ArgoCD, head, true, verdict.Verify("web", head, fixture.RolledOut(fixture.Repo+"@"+fixture.DigestB, fixture.Repo+"@"+fixture.DigestB)), nil)
	mismatch := deployer.RelateVerifications(deployer.ArgoCD, head, true, verdict.Verify("web", head, hs), nil)
	for _, tc := range []struct {
		name        string
		e           history.Entry
		v           *verdict.Verification
		state       commitstatus.State
		comment     bool
		wantVerfied bool
	}{
		{name: "behind is pending", v: pending, state: commitstatus.Pending},
		{name: "pending once", e: history.Entry{Reported: commitstatus.Pending}, v: pending, state: ""},
		{name: "verified is success and a comment", e: history.Entry{Reported: commitstatus.Pending}, v: verified, state: commitstatus.Success, comment: true, wantVerfied: true},
		{name: "verified again posts nothing", e: history.Entry{Reported: commitstatus.Success, Verified: true, Commented: true}, v: verified, wantVerfied: true},
		{name: "a restart after success stays success", e: history.Entry{Reported: commitstatus.Success, Verified: true, Commented: true}, v: pending, wantVerfied: true},
		{name: "a mismatch is failure", e: history.Entry{Reported: commitstatus.Success, Verified: true, Commented: true}, v: mismatch, state: commitstatus.Failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.e.Commit, tc.e.Result = head, history.Observed
			s := Observed(tc.e, tc.v, now)
			if s.State != tc.state || s.Comment != tc.comment {
				t.Errorf("state %q comment %t, want %q %t (desc %q)", s.State, s.Comment, tc.state, tc.comment, s.Desc)
			}
			if s.Entry.Verified != tc.wantVerfied || s.Entry.Summary != tc.v.Summary() {
				t.Errorf("entry verified %t summary %q, want %t %q", s.Entry.Verified, s.Entry.Summary, tc.wantVerfied, tc.v.Summary())
			}
		})
	}
}

func TestSettle(t *testing.T) {
	synced := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	verified := verdict.Verify("web", "abc", fixture.RolledOut(fixture.Repo+"@"+fixture.DigestB, fixture.Repo+"@"+fixture.DigestB))
	rolling := verdict.Verify("web", "abc", fixture.RolledOut(fixture.Repo+"@"+fixture.DigestB))
	pending := history.Entry{Commit: "abc", Time: synced, Result: history.Applied, Reported: commitstatus.Pending}
	for _, tc := range []struct {
		name    string
		entry   history.Entry
		v       *verdict.Verification
		h       verdict.HealthReport
		at      time.Duration // after the sync
		state   commitstatus.State
		desc    string
		final   bool
		comment bool
	}{
		{name: "verified", entry: pending, v: verified, h: verdict.HealthReport{Health: verdict.Healthy}, at: time.Minute,
			state: commitstatus.Success, desc: "2/2 Pods run sha256:bbbbbbbbbbbb…", final: true, comment: true},
		{name: "verified while the rollout still progresses", entry: pending, v: verified, h: verdict.HealthReport{Health: verdict.Progressing}, at: time.Minute},
		{name: "already commented", entry: history.Entry{Commit: "abc", Time: synced, Result: history.Applied, Reported: commitstatus.Failure, Commented: true},
			v: verified, h: verdict.HealthReport{Health: verdict.Healthy}, state: commitstatus.Success, final: true},
		{name: "rolling out, status already pending", entry: pending, v: rolling, h: verdict.HealthReport{Health: verdict.Progressing}, at: time.Minute},
		{name: "rolling out, no status yet", entry: history.Entry{Commit: "abc", Time: synced, Result: history.Applied}, v: rolling,
			h: verdict.HealthReport{Health: verdict.Progressing}, state: commitstatus.Pending, desc: "rolling out: Deployment web/web: 1/2 Pods"},
		{name: "degraded stays open", entry: pending, v: rolling, h: verdict.HealthReport{Health: verdict.Degraded, Reason: "Deployment web/web: pod x container app: ErrImagePull"},
			at: time.Minute, state: commitstatus.Failure, desc: "Degraded: Deployment web/web: pod x container app: ErrImagePull"},
		{name: "timed out", entry: pending, v: rolling, h: verdict.HealthReport{Health: verdict.Progressing, Reason: "Deployment web/web: Ready: 1/2"}, at: 11 * time.Minute,
			state: commitstatus.Failure, desc: "not verified 10m0s after the sync: Deployment web/web: 1/2 Pods", final: true, comment: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Sync(tc.entry, tc.v, tc.h, synced.Add(tc.at), 10*time.Minute)
			if got.State != tc.state || !strings.HasPrefix(got.Desc, tc.desc) || got.Entry.Final != tc.final || got.Comment != tc.comment {
				t.Errorf("settle = state %q desc %q final %t comment %t; want %q %q… %t %t",
					got.State, got.Desc, got.Entry.Final, got.Comment, tc.state, tc.desc, tc.final, tc.comment)
			}
			if got.Entry.Verified {
				if diff := cmp.Diff([]history.DigestCount{{Digest: fixture.DigestB, Pods: 2}}, got.Entry.Digests); diff != "" {
					t.Errorf("digests (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestSuperseded: a sync replaced while it rolled out fine is superseded;
// one last seen failing says it never verified, and what was seen.
func TestSuperseded(t *testing.T) {
	for _, tc := range []struct {
		e    history.Entry
		want string
	}{
		{history.Entry{}, "superseded by abc1234 before it was verified"},
		{history.Entry{Health: verdict.Healthy, Summary: "2 of 2 Pods run the pinned digests"}, "superseded by abc1234 before it was verified"},
		{history.Entry{Health: verdict.Progressing, Summary: "0 of 2 Pods Ready"}, "never verified, replaced by abc1234; last seen Progressing: 0 of 2 Pods Ready"},
		{history.Entry{Health: verdict.Degraded, Summary: "ImagePullBackOff"}, "never verified, replaced by abc1234; last seen Degraded: ImagePullBackOff"},
	} {
		got := Superseded(tc.e, "abc1234")
		if !got.Final || got.Summary != tc.want {
			t.Errorf("Superseded(%+v) = final %t, %q; want final, %q", tc.e, got.Final, got.Summary, tc.want)
		}
	}
}
