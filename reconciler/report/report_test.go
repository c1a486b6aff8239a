package report

import (
	"context"
	"strings"
	"testing"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/reconciler/internal/fixture"
	"pinbot.dev/pinbot/reconciler/verdict"
)

func TestReporter(t *testing.T) {
	r := New(nopForge{}, "https://git.example/gitea/")
	for _, tc := range []struct {
		repo string
		want gitforge.Repo
		ok   bool
	}{
		{"https://git.example/gitea/org/manifests.git", gitforge.Repo{Owner: "org", Name: "manifests"}, true},
		{"https://git.example/org/manifests.git", gitforge.Repo{}, false},
		{"https://other.example/gitea/org/manifests.git", gitforge.Repo{}, false},
	} {
		got, ok := r.RepoOf(tc.repo)
		if got != tc.want || ok != tc.ok {
			t.Errorf("repoOf(%s) = %v, %t; want %v, %t", tc.repo, got, ok, tc.want, tc.ok)
		}
	}
	if !IsPinbotPull(&gitforge.Pull{Head: "pinbot/web/app"}) || !IsPinbotPull(&gitforge.Pull{Head: "x", Body: "text <!-- pinbot:promotion -->"}) ||
		IsPinbotPull(&gitforge.Pull{Head: "feature/x", Body: "by hand"}) {
		t.Error("IsPinbotPull misjudges")
	}
	body := CommentBody(verdict.Verify("web", "0123456789abcdef", fixture.RolledOut(fixture.Repo+"@"+fixture.DigestB, fixture.Repo+"@"+fixture.DigestB)))
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

func TestMergedPullIsRemembered(t *testing.T) {
	rep := New(nopForge{}, "http://gitea:3000") // nopForge panics if PullByMergeCommit is asked
	rep.Remember(&gitforge.Pull{Number: 9, Head: "pinbot/web", Base: "main", State: "closed", Merged: true, MergeCommit: "m1"})
	got, err := rep.pullFor(context.Background(), gitforge.Repo{Owner: "org", Name: "app"}, "m1")
	if err != nil || got == nil || got.Number != 9 {
		t.Fatalf("pullFor(m1) = %+v, %v; want pull request 9 without asking the forge", got, err)
	}
}
