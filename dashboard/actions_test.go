package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/release"
)

// actorSource is fakeSource with fixtureLedger and a person who may use
// verbs in prod (the page asks Allowed for each stage).
type actorSource struct {
	fakeSource
	user  string
	verbs []string
}

func (s actorSource) Ledgers(context.Context) ([]Ledger, error) {
	lg := fixtureLedger()
	lg.Ledger.PauseBy("prod", "alice", "incident 42", now.Add(-30*time.Second))
	return []Ledger{lg}, nil
}

func (s actorSource) Allowed(_ *http.Request, repo, env string) []string {
	if repo == "platform/manifests" && env == "prod" {
		return s.verbs
	}
	return nil
}

func (s actorSource) Person(*http.Request) (string, string) {
	if s.user == "" {
		return "", ""
	}
	return s.user, "token-of-" + s.user
}

// TestThePageOffersWhatRBACAllows: an operator's release page links each
// allowed action to its confirmation (Pause in prod, Release on prod's
// hold, with the whole digest), and none in staging; a viewer's page has
// none; the signed-in person's name and a sign-out form with their token
// are in the header, and nothing of the kind for a reader not signed in,
// who still reads who did what and why.
func TestThePageOffersWhatRBACAllows(t *testing.T) {
	resume := "/actions/resume?" + url.Values{"env": {"prod"}, "repo": {"platform/manifests"}}.Encode()
	release := "/actions/release?" + url.Values{"digest": {digestB}, "env": {"prod"}, "image": {"platform/web"}, "repo": {"platform/manifests"}}.Encode()
	for _, tc := range []struct {
		name  string
		src   actorSource
		want  []string
		never []string
	}{
		{"operator", actorSource{user: "olga", verbs: []string{"pause", "resume", "rollback", "hold", "release"}},
			[]string{`href="` + htmlAttr(resume) + `">Resume promotions`, `href="` + htmlAttr(release) + `">Release hold`, `Signed in as <strong class="user">olga</strong>`, `name="csrf" value="token-of-olga"`},
			[]string{"Pause promotions", "env=staging", "/actions/hold", "/actions/rollback"}}, // prod is paused; its pinned digest held, and rolling back
		{"viewer", actorSource{user: "vic"}, []string{`Signed in as <strong class="user">vic</strong>`}, []string{"/actions/"}},
		{"not signed in", actorSource{}, []string{`<strong class="by">alice</strong> ChainPaused prod`, `<q class="why">incident 42</q>`}, []string{"/actions/", "Sign out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, Handler(tc.src, time.Second), "/releases/platform/manifests")
			if code != http.StatusOK {
				t.Fatalf("%d: %s", code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("the page lacks %s", w)
				}
			}
			for _, n := range tc.never {
				if strings.Contains(body, n) {
					t.Errorf("the page has %s", n)
				}
			}
		})
	}
}

// htmlAttr is s as html/template writes it in an attribute.
func htmlAttr(s string) string { return strings.ReplaceAll(s, "&", "&amp;") }

// proposalSource is actorSource whose prod has pinbot's onward pull
// request #7 open, its gate as posted.
type proposalSource struct {
	actorSource
	gate commitstatus.State
}

func (s proposalSource) Ledgers(context.Context) ([]Ledger, error) {
	lg := fixtureLedger()
	lg.Ledger.Envs["prod"]["platform/worker"] = &release.Track{Pinned: digestA,
		Proposal: &release.Proposal{PR: 7, Digest: digestB, Head: "c0ffee", From: "staging", Gate: &release.PostedGate{State: s.gate, Description: "proven in staging"}}}
	return []Ledger{lg}, nil
}

// TestMergeNowOnlyPastAGreenGate: a person with the promote verb may merge
// pinbot's onward pull request from the page once its gate is green, and
// is offered nothing while it waits there.
func TestMergeNowOnlyPastAGreenGate(t *testing.T) {
	merge := `href="` + htmlAttr("/actions/promote?"+url.Values{"env": {"prod"}, "image": {"platform/worker"}, "repo": {"platform/manifests"}}.Encode()) + `">Merge #7 now`
	for _, tc := range []struct {
		gate  commitstatus.State
		verbs []string
		want  bool
	}{
		{commitstatus.Success, []string{"promote"}, true},
		{commitstatus.Pending, []string{"promote"}, false},
		{commitstatus.Success, []string{"hold"}, false},
	} {
		_, body := get(t, Handler(proposalSource{actorSource{user: "olga", verbs: tc.verbs}, tc.gate}, time.Second), "/releases/platform/manifests")
		if got := strings.Contains(body, merge); got != tc.want {
			t.Errorf("gate %s, verbs %v: offers the merge %t, want %t", tc.gate, tc.verbs, got, tc.want)
		}
	}
}
