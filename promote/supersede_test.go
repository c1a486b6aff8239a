package promote

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/promote/pr"
)

// TestOutOfOrderBuilds promotes build 43, then build 42 finishing late,
// on the real Gitea and its registry: 42 must change neither the open pull
// request nor, once 43 is merged, the base; --allow-older overrides.
func TestOutOfOrderBuilds(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	app := f.image("app")
	d41 := f.pushImage(app, "41", time.Time{})
	f.createRepo(map[string]string{
		"app.yaml": fmt.Sprintf("image: %s:41@%s\n", app, d41),
	})
	d42 := f.pushImage(app, "42", time.Time{})
	d43 := f.pushImage(app, "43", time.Time{})
	env := f.env()
	promote := func(tag, digest string, allowOlder bool) Result {
		t.Helper()
		res, err := Run(ctx, env, Request{AllowOlder: allowOlder, Inputs: []Input{{Image: app, Tags: []string{tag}, Digest: digest, Source: pr.SourceDigestFile, File: "digest.txt"}}})
		if err != nil {
			t.Fatalf("promoting %s: %s", tag, err)
		}
		if len(res) != 1 {
			t.Fatalf("promoting %s: %d results, want 1", tag, len(res))
		}
		return res[0]
	}
	openDigest := func() (int64, string, string) {
		t.Helper()
		prs := f.openPulls()
		if len(prs) != 1 {
			t.Fatalf("%d open pull requests, want 1", len(prs))
		}
		m, err := pr.ParseBody(prs[0].Body)
		if err != nil {
			t.Fatal(err)
		}
		return prs[0].Number, prs[0].HeadSHA, m.Images[0].Digest
	}

	if got := promote("43", d43, false).Status; got != StatusOpened {
		t.Fatalf("promoting 43: status %s, want opened", got)
	}
	number, head, _ := openDigest()

	// 42 finishes late: the open pull request proposes 43.
	late := promote("42", d42, false)
	if late.Status != StatusSuperseded || len(late.Meta.Changes) != 0 {
		t.Errorf("late 42 against the pull request: status %s, %d changes; want superseded, none", late.Status, len(late.Meta.Changes))
	}
	n2, head2, digest := openDigest()
	if diff := cmp.Diff([]any{number, head, d43}, []any{n2, head2, digest}); diff != "" {
		t.Errorf("open pull request after the late 42 (-want +got):\n%s", diff)
	}

	// 43 is merged: the base pins it, and 42 is older than the base.
	f.merge(number)
	late = promote("42", d42, false)
	if late.Status != StatusSuperseded {
		t.Errorf("late 42 against the base: status %s, want superseded; notes %q", late.Status, late.Notes)
	}
	if prs := f.openPulls(); len(prs) != 0 {
		t.Errorf("late 42 left %d open pull requests, want none", len(prs))
	}
	if want := fmt.Sprintf("image: %s:43@%s\n", app, d43); f.file("main", "app.yaml") != want {
		t.Errorf("base app.yaml = %q, want %q", f.file("main", "app.yaml"), want)
	}

	// --allow-older rolls back on purpose.
	back := promote("42", d42, true)
	if back.Status != StatusOpened {
		t.Fatalf("42 with --allow-older: status %s, want opened", back.Status)
	}
	if _, _, digest := openDigest(); digest != d42 {
		t.Errorf("pull request with --allow-older proposes %s, want %s", digest, d42)
	}
}
