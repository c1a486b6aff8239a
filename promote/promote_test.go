package promote

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/testenv/filetree"
	"pinbot.dev/pinbot/pins"
	"pinbot.dev/pinbot/promote/pr"
)

// appRepo is a manifest repository with an index pin (with tag) and a
// platform-manifest pin (Helm, arm64, no tag) of app, and a pin of an
// unrelated image.
func appRepo(f *fixture, app string, v1 index, side string, sideDigest string) map[string]string {
	return map[string]string{
		"README.md": "manifests\n",
		"envs/prod/app.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
spec:
  template:
    spec:
      containers:
        - name: app # the web tier
          image: %s:v1@%s
        - name: sidecar
          image: %s:1.0@%s
`, app, v1.Digest, side, sideDigest),
		"envs/prod/values.yaml": fmt.Sprintf(`app:
  image:
    repository: %s
    digest: %s   # arm nodes
`, app, v1.Arm64),
	}
}

func TestPromoteLifecycle(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	app, side := f.image("app"), f.image("side")
	v1 := f.pushIndex(app, "v1")
	sideDigest := f.pushImage(side, "1.0", time.Time{})
	f.createRepo(appRepo(f, app, v1, side, sideDigest))
	env := f.env()
	env.CacheDir = t.TempDir() // every promotion after the first reuses the clone
	promote := func(tag string, digest string) Result {
		t.Helper()
		res, err := Run(ctx, env, Request{Inputs: []Input{{Image: app, Tags: []string{tag}, Digest: digest, Source: pr.SourceDigestFile, File: "digest.txt"}}})
		if err != nil {
			t.Fatalf("promoting %s: %s", tag, err)
		}
		if len(res) != 1 {
			t.Fatalf("promoting %s: %d results, want 1: %+v", tag, len(res), res)
		}
		return res[0]
	}
	branch := pr.Branch("pinbot/", "default", app)

	// 1. A promotion opens a pull request whose diff is exactly the pins.
	v2 := f.pushIndex(app, "v2")
	first := promote("v2", v2.Digest)
	if first.Status != StatusOpened || first.Pull == nil {
		t.Fatalf("first promotion: status %s, pull %v; want a new pull request", first.Status, first.Pull)
	}
	if first.Branch != branch {
		t.Errorf("branch = %q, want %q", first.Branch, branch)
	}
	removed, added := f.pullDiffLines(first.Pull.Number)
	wantRemoved := []string{
		fmt.Sprintf("          image: %s:v1@%s", app, v1.Digest),
		fmt.Sprintf("    digest: %s   # arm nodes", v1.Arm64),
	}
	wantAdded := []string{
		fmt.Sprintf("          image: %s:v2@%s", app, v2.Digest),
		fmt.Sprintf("    digest: %s   # arm nodes", v2.Arm64), // the platform pin keeps its kind
	}
	if diff := cmp.Diff([][]string{wantRemoved, wantAdded}, [][]string{removed, added}); diff != "" {
		t.Errorf("pull request diff (-want +got):\n%s", diff)
	}
	meta, err := pr.ParseBody(first.Pull.Body)
	if err != nil {
		t.Fatalf("reading the pull request body: %s", err)
	}
	if meta.Head != first.Pull.HeadSHA || meta.Images[0].Digest != v2.Digest || meta.Images[0].Source != pr.SourceDigestFile {
		t.Errorf("hidden block = %+v; want head %s, digest %s from the digest file", meta, first.Pull.HeadSHA, v2.Digest)
	}
	if want := "Promote " + app + " to v2@" + imageref.Short(v2.Digest) + " (default)"; first.Pull.Title != want {
		t.Errorf("title = %q, want %q", first.Pull.Title, want)
	}
	for _, want := range []string{"envs/prod/app.yaml:10", "envs/prod/values.yaml:4", "linux/amd64, linux/arm64", "`c0ffee`", "Kaniko digest file `digest.txt`"} {
		if !strings.Contains(first.Pull.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, first.Pull.Body)
		}
	}

	// 2. The same promotion again changes nothing.
	again := promote("v2", v2.Digest)
	if again.Status != StatusUnchanged || again.Pull == nil || again.Pull.Number != first.Pull.Number || again.Pull.HeadSHA != first.Pull.HeadSHA {
		t.Errorf("repeated promotion: status %s, pull %+v; want unchanged #%d at %s", again.Status, again.Pull, first.Pull.Number, first.Pull.HeadSHA)
	}

	// 3. A newer digest updates the same pull request.
	v3 := f.pushIndex(app, "v3")
	third := promote("v3", v3.Digest)
	if third.Status != StatusUpdated || third.Pull.Number != first.Pull.Number {
		t.Errorf("newer digest: status %s, #%d; want updated #%d", third.Status, third.Pull.Number, first.Pull.Number)
	}
	if got := f.file(branch, "envs/prod/values.yaml"); !strings.Contains(got, v3.Arm64) {
		t.Errorf("branch values.yaml does not pin v3's arm64 child:\n%s", got)
	}
	if n := len(f.openPulls()); n != 1 {
		t.Errorf("%d open pull requests, want 1", n)
	}

	// 4. After a merge, the next promotion opens a new pull request.
	f.merge(first.Pull.Number)
	v4 := f.pushIndex(app, "v4")
	fourth := promote("v4", v4.Digest)
	if fourth.Status != StatusOpened || fourth.Pull.Number == first.Pull.Number {
		t.Errorf("after merge: status %s, #%d; want a new pull request", fourth.Status, fourth.Pull.Number)
	}
	if removed, _ := f.pullDiffLines(fourth.Pull.Number); len(removed) != 2 || !strings.Contains(removed[0], v3.Digest) {
		t.Errorf("the new pull request is not built on the merged base: removed lines %q", removed)
	}

	// 5. Promoting what the base already pins is a no-op that closes the
	// now obsolete pull request.
	fifth := promote("v3", v3.Digest)
	if fifth.Status != StatusAlreadyPinned || fifth.Closed == nil || fifth.Closed.Number != fourth.Pull.Number {
		t.Errorf("already pinned: status %s, closed %v; want #%d closed", fifth.Status, fifth.Closed, fourth.Pull.Number)
	}
	if n := len(f.openPulls()); n != 0 {
		t.Errorf("%d open pull requests after the obsolete one was closed, want 0", n)
	}
	comments, err := f.forge.Comments(ctx, f.repo, fourth.Pull.Number)
	if err != nil {
		t.Fatal(err)
	}
	if len(comments) != 1 || !strings.Contains(comments[0], "already pins "+app+" v3@"+imageref.Short(v3.Digest)) {
		t.Errorf("close comments = %q", comments)
	}
}

func TestPromoteRefusals(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	app, side := f.image("app"), f.image("side")
	v1 := f.pushIndex(app, "v1")
	sideDigest := f.pushImage(side, "1.0", time.Time{})
	f.createRepo(appRepo(f, app, v1, side, sideDigest))
	built := f.pushIndex(app, "v2")
	f.tag(app, built.Digest, "build-17") // the build also pushed a unique tag
	f.pushIndex(app, "v2")               // someone pushed v2 again after the build
	lost := f.pushIndex(app, "v3")
	f.pushIndex(app, "v3") // moved, and the built digest went with it
	missing := "sha256:" + strings.Repeat("ab", 32)

	tests := []struct {
		name    string
		in      Input
		allow   bool
		wantErr error
	}{
		{name: "digest file and registry disagree", in: Input{Image: app, Tags: []string{"v2"}, Digest: built.Digest, Source: pr.SourceDigestFile, File: "digest"}, wantErr: errTagMoved},
		{name: "tag moved and the built digest is gone", in: Input{Image: app, Tags: []string{"v3"}, Digest: lost.Digest, Source: pr.SourceBuildxMetadata, File: "meta.json"}, allow: true, wantErr: errTagMoved},
		{name: "digest not in the registry", in: Input{Image: app, Digest: missing, Source: pr.SourceFlag}, wantErr: errDigestNotFound},
		{name: "tag gone", in: Input{Image: app, Tags: []string{"gone"}, Digest: built.Digest, Source: pr.SourceImageNameFile, File: "name"}, wantErr: errTagMoved},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(ctx, f.env(), Request{Inputs: []Input{tc.in}, AllowTagMoved: tc.allow})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			t.Logf("refused: %s", err)
			if got := f.branches(); !cmp.Equal(got, []string{"main"}) {
				t.Errorf("branches after a refused promotion = %q, want only main", got)
			}
		})
	}

	// With --allow-tag-moved the build's digest is promoted.
	res, err := Run(ctx, f.env(), Request{Inputs: []Input{tests[0].in}, AllowTagMoved: true})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Status != StatusOpened || res[0].Meta.Images[0].Digest != built.Digest {
		t.Errorf("allowed tag move: %s with %+v", res[0].Status, res[0].Meta.Images)
	}
}

func TestPromoteConcurrent(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	app, side := f.image("app"), f.image("side")
	v1 := f.pushIndex(app, "v1")
	sideDigest := f.pushImage(side, "1.0", time.Time{})
	f.createRepo(appRepo(f, app, v1, side, sideDigest))
	branch := pr.Branch("pinbot/", "default", app)

	for round := range 3 {
		a, b := f.pushIndex(app, fmt.Sprintf("a%d", round)), f.pushIndex(app, fmt.Sprintf("b%d", round))
		type out struct {
			res []Result
			err error
		}
		done := make(chan out, 2)
		for _, d := range []string{a.Digest, b.Digest} {
			go func() {
				res, err := Run(ctx, f.env(), Request{Inputs: []Input{{Image: app, Digest: d, Source: pr.SourceFlag}}})
				done <- out{res, err}
			}()
		}
		for range 2 {
			if o := <-done; o.err != nil {
				t.Fatalf("round %d: %s", round, o.err)
			}
		}
		prs := f.openPulls()
		if len(prs) != 1 {
			t.Fatalf("round %d: %d open pull requests, want exactly 1", round, len(prs))
		}
		pull := prs[0]
		// Git is the authority on what the branch holds. Gitea records a
		// pushed head in its pull request asynchronously and, when two
		// pushes race, not always in order, so pr.HeadSHA may name a
		// commit Git no longer holds; the text must describe Git's head.
		head, err := gitforge.RemoteHead(ctx, f.srv.RepoURL(f.owner, f.name), branch, gitforge.Auth{Token: f.srv.Token})
		if err != nil {
			t.Fatal(err)
		}
		if pull.HeadSHA != head {
			t.Logf("round %d: Gitea's pull request #%d shows head %s, Git holds %s", round, pull.Number, pull.HeadSHA, head)
		}
		content := f.file(head, "envs/prod/app.yaml")
		var onBranch string
		for _, d := range []string{a.Digest, b.Digest} {
			if strings.Contains(content, d) {
				onBranch = d
			}
		}
		if onBranch == "" {
			t.Fatalf("round %d: the branch pins neither digest:\n%s", round, content)
		}
		meta, err := pr.ParseBody(pull.Body)
		if err != nil {
			t.Fatal(err)
		}
		if meta.Images[0].Digest != onBranch || meta.Head != head {
			t.Errorf("round %d: pull request #%d describes %s at %s, but its branch holds %s at %s",
				round, pull.Number, meta.Images[0].Digest, meta.Head, onBranch, head)
		}
	}
}

// TestPromoteTargets promotes one image into two targets: one pull request
// each, labelled and with reviewers from .pinbot.yaml.
func TestPromoteTargets(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.srv.CreateUser(ctx, "reviewer-"+f.name); err != nil {
		t.Fatal(err)
	}
	app := f.image("app")
	v1 := f.pushImage(app, "v1", time.Time{})
	f.createRepo(map[string]string{
		".pinbot.yaml": fmt.Sprintf(`targets:
  - {name: staging, paths: ["envs/staging/**"]}
  - {name: prod, paths: ["envs/prod/**"]}
labels: [pinbot, promotion]
reviewers: [reviewer-%s]
branchPrefix: bot/
author: {name: Release Bot, email: release@example.com}
`, f.name),
		"envs/staging/app.yaml": "image: " + app + ":v1@" + v1 + "\n",
		"envs/prod/app.yaml":    "image: " + app + ":v1@" + v1 + "\n",
		"other/app.yaml":        "image: " + app + ":v1@" + v1 + "\n", // in no target
	})
	v2 := f.pushImage(app, "v2", time.Time{})
	res, err := Run(ctx, f.env(), Request{Inputs: []Input{{Image: app, Tags: []string{"v2"}, Source: pr.SourceRegistry}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res {
		got = append(got, fmt.Sprintf("%s %s %s %v %v", r.Target, r.Branch, r.Status, r.Pull.Labels, r.Pull.Reviewers))
		if r.Meta.Images[0].Digest != v2 || len(r.Meta.Changes) != 1 {
			t.Errorf("%s: %+v", r.Target, r.Meta)
		}
	}
	slug := pr.Slug(app)
	want := []string{
		"staging bot/staging/" + slug + " opened [pinbot promotion] [reviewer-" + f.name + "]",
		"prod bot/prod/" + slug + " opened [pinbot promotion] [reviewer-" + f.name + "]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	commit, _, err := f.sdk().GetSingleCommit(f.owner, f.name, res[0].Pull.HeadSHA)
	if err != nil {
		t.Fatal(err)
	}
	msg := commit.RepoCommit.Message
	for _, want := range []string{"Pinbot-Image: " + app, "Pinbot-Digest: " + v2, "Pinbot-Tag: v2", "Pinbot-Target: staging"} {
		if !strings.Contains(msg, want+"\n") {
			t.Errorf("commit message lacks trailer %q:\n%s", want, msg)
		}
	}
	if a := commit.RepoCommit.Author; a.Name != "Release Bot" || a.Email != "release@example.com" {
		t.Errorf("commit author = %s <%s>", a.Name, a.Email)
	}
	if got := f.file("main", "other/app.yaml"); !strings.Contains(got, v1) {
		t.Errorf("a file in no target changed")
	}
}

// TestPromoteDryRun renders the proposal and pushes nothing.
func TestPromoteDryRun(t *testing.T) {
	f := newFixture(t)
	app := f.image("app")
	v1 := f.pushImage(app, "v1", time.Time{})
	f.createRepo(map[string]string{"app.yaml": "image: " + app + ":v1@" + v1 + "\n"})
	v2 := f.pushImage(app, "v2", time.Time{})
	env := f.env()
	env.CacheDir = filepath.Join(t.TempDir(), "not-a-dir")
	filetree.WriteFile(t, env.CacheDir, "a file where the cache should go: pinbot falls back to a temporary clone\n")
	res, err := Run(context.Background(), env, Request{DryRun: true, Inputs: []Input{{Image: app, Tags: []string{"v2"}, Digest: v2, Source: pr.SourceFlag}}})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("--- a/app.yaml\n+++ b/app.yaml\n@@ -1 +1 @@\n-image: %s:v1@%s\n+image: %s:v2@%s\n", app, v1, app, v2)
	if diff := cmp.Diff(want, res[0].Diff); diff != "" {
		t.Errorf("diff (-want +got):\n%s", diff)
	}
	if res[0].Status != StatusDryRun || !strings.Contains(res[0].Body, "<!-- pinbot:") {
		t.Errorf("status %s, body:\n%s", res[0].Status, res[0].Body)
	}
	if got := f.branches(); !cmp.Equal(got, []string{"main"}) {
		t.Errorf("branches after a dry run = %q", got)
	}
	if len(f.openPulls()) != 0 {
		t.Error("a dry run opened a pull request")
	}
}

// TestPromoteVariants: a promoted tag moves only pins of its variant and
// the body names the others; a digest without a tag is refused when the
// pins carry several variants, unless AnyVariant.
func TestPromoteVariants(t *testing.T) {
	f := newFixture(t)
	app := f.image("app")
	slim := f.pushImage(app, "1.0-slim", time.Time{})
	alpine := f.pushImage(app, "1.0-alpine", time.Time{})
	f.createRepo(map[string]string{
		"app.yaml":   "image: " + app + ":1.0-slim@" + slim + "\n",
		"Dockerfile": "FROM " + app + ":1.0-alpine@" + alpine + "\n",
	})
	next := f.pushImage(app, "1.1-slim", time.Time{})
	env := f.env()
	res, err := Run(context.Background(), env, Request{DryRun: true, Inputs: []Input{{Image: app, Tags: []string{"1.1-slim"}, Digest: next, Source: pr.SourceFlag}}})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("--- a/app.yaml\n+++ b/app.yaml\n@@ -1 +1 @@\n-image: %s:1.0-slim@%s\n+image: %s:1.1-slim@%s\n", app, slim, app, next)
	if diff := cmp.Diff(want, res[0].Diff); diff != "" {
		t.Errorf("diff (-want +got):\n%s", diff)
	}
	skip := "skipped Dockerfile:1 (tag 1.0-alpine): variant -alpine differs from the set's tag 1.1-slim (variant -slim)"
	if !strings.Contains(res[0].Body, skip) || !slices.Contains(res[0].Notes, skip) {
		t.Errorf("body and notes lack %q:\n%s\nnotes %q", skip, res[0].Body, res[0].Notes)
	}

	_, err = Run(context.Background(), env, Request{DryRun: true, Inputs: []Input{{Image: app, Digest: next, Source: pr.SourceFlag}}})
	if !errors.Is(err, pins.ErrMixedVariants) {
		t.Errorf("promoting without a tag: %v, want ErrMixedVariants", err)
	}
	res, err = Run(context.Background(), env, Request{DryRun: true, Choose: ChooseOptions{AnyVariant: true}, Inputs: []Input{{Image: app, Digest: next, Source: pr.SourceFlag}}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res[0].Meta.Changes); n != 2 {
		t.Errorf("AnyVariant changed %d pins, want 2", n)
	}
}
