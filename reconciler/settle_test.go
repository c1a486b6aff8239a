package reconciler

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/gitforge"
)

func TestSettle(t *testing.T) {
	synced := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	verified := Verify("web", "abc", rolledOut(repo+"@"+digestB, repo+"@"+digestB))
	rolling := Verify("web", "abc", rolledOut(repo+"@"+digestB))
	pending := Entry{Commit: "abc", Time: synced, Result: Applied, Reported: statePending}
	for _, tc := range []struct {
		name    string
		entry   Entry
		v       *Verification
		h       HealthReport
		at      time.Duration // after the sync
		state   string
		desc    string
		final   bool
		comment bool
	}{
		{name: "verified", entry: pending, v: verified, h: HealthReport{Health: Healthy}, at: time.Minute,
			state: stateSuccess, desc: "2/2 Pods run sha256:bbbbbbbbbbbb…", final: true, comment: true},
		{name: "verified while the rollout still progresses", entry: pending, v: verified, h: HealthReport{Health: Progressing}, at: time.Minute},
		{name: "already commented", entry: Entry{Commit: "abc", Time: synced, Result: Applied, Reported: stateFailure, Commented: true},
			v: verified, h: HealthReport{Health: Healthy}, state: stateSuccess, final: true},
		{name: "rolling out, status already pending", entry: pending, v: rolling, h: HealthReport{Health: Progressing}, at: time.Minute},
		{name: "rolling out, no status yet", entry: Entry{Commit: "abc", Time: synced, Result: Applied}, v: rolling,
			h: HealthReport{Health: Progressing}, state: statePending, desc: "rolling out: Deployment web/web: 1/2 Pods"},
		{name: "degraded stays open", entry: pending, v: rolling, h: HealthReport{Health: Degraded, Reason: "Deployment web/web: pod x container app: ErrImagePull"},
			at: time.Minute, state: stateFailure, desc: "Degraded: Deployment web/web: pod x container app: ErrImagePull"},
		{name: "timed out", entry: pending, v: rolling, h: HealthReport{Health: Progressing, Reason: "Deployment web/web: Ready: 1/2"}, at: 11 * time.Minute,
			state: stateFailure, desc: "not verified 10m0s after the sync: Deployment web/web: 1/2 Pods", final: true, comment: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := settle(tc.entry, tc.v, tc.h, synced.Add(tc.at), 10*time.Minute)
			if got.state != tc.state || !strings.HasPrefix(got.desc, tc.desc) || got.entry.Final != tc.final || got.comment != tc.comment {
				t.Errorf("settle = state %q desc %q final %t comment %t; want %q %q… %t %t",
					got.state, got.desc, got.entry.Final, got.comment, tc.state, tc.desc, tc.final, tc.comment)
			}
			if got.entry.Verified {
				if diff := cmp.Diff([]DigestCount{{Digest: digestB, Pods: 2}}, got.entry.Digests); diff != "" {
					t.Errorf("digests (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestReporter(t *testing.T) {
	r := &reporter{forge: nopForge{}, forgeURL: "https://git.example/gitea/"}
	for _, tc := range []struct {
		repo string
		want gitforge.Repo
		ok   bool
	}{
		{"https://git.example/gitea/org/manifests.git", gitforge.Repo{Owner: "org", Name: "manifests"}, true},
		{"https://git.example/org/manifests.git", gitforge.Repo{}, false},
		{"https://other.example/gitea/org/manifests.git", gitforge.Repo{}, false},
	} {
		got, ok := r.repoOf(&App{Repo: tc.repo})
		if got != tc.want || ok != tc.ok {
			t.Errorf("repoOf(%s) = %v, %t; want %v, %t", tc.repo, got, ok, tc.want, tc.ok)
		}
	}
	if !IsPinbotPull(&gitforge.Pull{Head: "pinbot/web/app"}) || !IsPinbotPull(&gitforge.Pull{Head: "x", Body: "text <!-- pinbot:promotion -->"}) ||
		IsPinbotPull(&gitforge.Pull{Head: "feature/x", Body: "by hand"}) {
		t.Error("IsPinbotPull misjudges")
	}
	body := CommentBody(Verify("web", "0123456789abcdef", rolledOut(repo+"@"+digestB, repo+"@"+digestB)))
	for _, want := range []string{"<!-- pinbot:verification app=web commit=0123456789abcdef -->",
		"**pinbot verified `web`** at 0123456789ab: 2/2 Pods run sha256:bbbbbbbbbbbb…",
		"| web/web-new-1 | app | `sha256:bbbbbbbbbbbb…` | `sha256:bbbbbbbbbbbb…` | Verified |",
		"1 containers of older revisions"} {
		if !strings.Contains(body, want) {
			t.Errorf("comment body lacks %q:\n%s", want, body)
		}
	}
}

// nopForge satisfies Forge for tests that never reach the network.
type nopForge struct{ Forge }
