package promote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/promote/pr"
)

func TestDrift(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	app, web, api, side, broken := f.image("app"), f.image("web"), f.image("api"), f.image("side"), f.image("broken")
	app1 := f.pushIndex(app, "main")
	f.tag(app, app1.Digest, "keep")
	web1 := f.pushImage(web, "stable", time.Time{})
	api1 := f.pushImage(api, "main", time.Time{})
	side1 := f.pushImage(side, "1.0", time.Time{})
	f.createRepo(map[string]string{
		".pinbot.yaml": "track:\n  - {image: " + api + ", tag: main}\n",
		"app.yaml": fmt.Sprintf(`containers:
  - image: %s:main@%s
  - image: %s:1.0@%s
  - image: %s:main@%s
`, app, app1.Digest, side, side1, broken, "sha256:"+strings.Repeat("0f", 32)),
		"values.yaml": fmt.Sprintf(`web:
  repository: %s
  tag: stable
  digest: %s
`, web, web1),
		"kustomization.yaml": fmt.Sprintf(`images:
  - name: api
    newName: %s
    digest: %s
`, api, api1),
	})

	// app's tag and api's tracked tag move; web and side stay; broken
	// is not in the registry at all.
	app2 := f.pushIndex(app, "main")
	api2 := f.pushImage(api, "main", time.Time{})
	rep, err := Drift(ctx, f.env(), DriftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Summary())
	if rep.Checked != 5 {
		t.Errorf("checked %d tags, want 5", rep.Checked)
	}
	if got := movedNames(rep.Moved); !cmp.Equal(got, []string{api + ":main", app + ":main"}) {
		t.Errorf("moved = %q", got)
	}
	if len(rep.Failed) != 1 || rep.Failed[0].Image != broken || rep.Err() == nil {
		t.Errorf("failed = %+v; want only %s", rep.Failed, broken)
	} else if msg := rep.Failed[0].Error(); !strings.Contains(msg, broken+":main") || !strings.Contains(msg, "404") {
		t.Errorf("failure message %q does not name the tag and the registry's answer", msg)
	}
	byBranch := map[string]Result{}
	for _, r := range rep.Results {
		byBranch[r.Branch] = r
		if r.Status != StatusOpened {
			t.Errorf("%s: status %s, want opened", r.Branch, r.Status)
		}
	}
	if len(rep.Results) != 2 || len(f.openPulls()) != 2 {
		t.Fatalf("results %d, open pull requests %d; want one per moved image", len(rep.Results), len(f.openPulls()))
	}
	appPR := byBranch[pr.Branch("pinbot/", "default", app)].Pull
	removed, added := f.pullDiffLines(appPR.Number)
	if diff := cmp.Diff([][]string{
		{fmt.Sprintf("  - image: %s:main@%s", app, app1.Digest)},
		{fmt.Sprintf("  - image: %s:main@%s", app, app2.Digest)},
	}, [][]string{removed, added}); diff != "" {
		t.Errorf("app pull request diff (-want +got):\n%s", diff)
	}
	apiPR := byBranch[pr.Branch("pinbot/", "default", api)].Pull
	removed, added = f.pullDiffLines(apiPR.Number)
	if diff := cmp.Diff([][]string{{"    digest: " + api1}, {"    digest: " + api2}}, [][]string{removed, added}); diff != "" {
		t.Errorf("api pull request diff (-want +got):\n%s", diff)
	}
	if m, err := pr.ParseBody(apiPR.Body); err != nil || m.Images[0].Source != pr.SourceDrift || m.Images[0].Tag != "main" {
		t.Errorf("api hidden block = %+v, %v", m, err)
	}

	// A second run changes nothing.
	rep, err = Drift(ctx, f.env(), DriftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Status != StatusUnchanged {
			t.Errorf("second run: %s is %s, want unchanged", r.Branch, r.Status)
		}
	}

	// app's tag moves back to the pinned digest: its pull request is
	// obsolete and closed; api's stays.
	f.tag(app, app1.Digest, "main")
	rep, err = Drift(ctx, f.env(), DriftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep.Summary())
	if rep.Closed() != 1 || len(rep.Moved) != 1 {
		t.Errorf("after app's tag moved back: %s", rep.Summary())
	}
	open := f.openPulls()
	if len(open) != 1 || open[0].Number != apiPR.Number {
		t.Errorf("open pull requests = %+v, want only #%d", open, apiPR.Number)
	}
}

func movedNames(ts []Tracked) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Image+":"+t.Tag)
	}
	sort.Strings(out)
	return out
}

func TestDriftMinAge(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	now := time.Now()
	built, reproducible := f.image("built"), f.image("reproducible")
	b1 := f.pushImage(built, "main", now.Add(-48*time.Hour))
	r1 := f.pushImage(reproducible, "main", time.Time{})
	f.createRepo(map[string]string{"app.yaml": fmt.Sprintf("a: {image: %s:main@%s}\nb: {image: %s:main@%s}\n", built, b1, reproducible, r1)})
	b2 := f.pushImage(built, "main", now.Add(-10*time.Minute)) // created ten minutes ago
	r2 := f.pushImage(reproducible, "main", time.Time{})       // created time unknown
	hour := time.Hour
	statePath := filepath.Join(t.TempDir(), "drift-state.json")

	run := func(at time.Time, state *State) DriftReport {
		t.Helper()
		env := f.env()
		env.Now = func() time.Time { return at }
		rep, err := Drift(ctx, env, DriftOptions{MinAge: &hour, State: state})
		if err != nil {
			t.Fatal(err)
		}
		t.Log(rep.Summary())
		return rep
	}

	// Without state, the created time measures age: built is held; the
	// reproducible image's age is unknown, so it is not held.
	rep := run(now, nil)
	if got := movedNames(rep.Held); !cmp.Equal(got, []string{built + ":main"}) {
		t.Errorf("held = %q, want only %s", got, built)
	}
	if got := movedNames(rep.Moved); !cmp.Equal(got, []string{reproducible + ":main"}) {
		t.Errorf("moved = %q", got)
	}
	if n := len(f.openPulls()); n != 1 {
		t.Errorf("%d open pull requests, want 1 (the held digest gets none)", n)
	}

	// With state, age is the time since drift first saw the digest: both
	// are new to it now, so both are held...
	state, err := LoadState(statePath)
	if err != nil {
		t.Fatal(err)
	}
	rep = run(now, state)
	if len(rep.Held) != 2 || len(rep.Moved) != 0 {
		t.Errorf("first run with state: %s", rep.Summary())
	}
	raw, err := os.ReadFile(statePath)
	if err != nil || !strings.Contains(string(raw), built+":main@"+b2) {
		t.Errorf("state file %s = %s, %v", statePath, raw, err)
	}
	// ...until the window has passed.
	state, err = LoadState(statePath)
	if err != nil {
		t.Fatal(err)
	}
	rep = run(now.Add(2*hour), state)
	if len(rep.Held) != 0 || len(rep.Moved) != 2 || rep.Count(StatusOpened) != 1 || rep.Count(StatusUnchanged) != 1 {
		t.Errorf("after the window: %s", rep.Summary())
	}
	if got := f.file(pr.Branch("pinbot/", "default", built), "app.yaml"); !strings.Contains(got, b2) || strings.Contains(got, r2) {
		t.Errorf("built's branch:\n%s", got)
	}
}

// TestDriftGroupAndPromotion groups moved images into one pull request per
// target, and leaves a branch with an open promotion (from CI) alone.
func TestDriftGroupAndPromotion(t *testing.T) {
	f := newFixture(t)
	ctx := testContext(t)
	a, b, c := f.image("a"), f.image("b"), f.image("c")
	a1, b1, c1 := f.pushImage(a, "main", time.Time{}), f.pushImage(b, "main", time.Time{}), f.pushImage(c, "main", time.Time{})
	f.createRepo(map[string]string{
		".pinbot.yaml": "drift: {group: target}\n",
		"app.yaml":     fmt.Sprintf("- image: %s:main@%s\n- image: %s:main@%s\n", a, a1, b, b1),
		"c.yaml":       fmt.Sprintf("image: %s:main@%s\n", c, c1),
	})
	a2, b2 := f.pushImage(a, "main", time.Time{}), f.pushImage(b, "main", time.Time{})
	rep, err := Drift(ctx, f.env(), DriftOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 1 || rep.Results[0].Branch != "pinbot/default/drift" || rep.Results[0].Status != StatusOpened {
		t.Fatalf("grouped drift: %+v", rep.Results)
	}
	pull := rep.Results[0].Pull
	if want := "Promote 2 images (default)"; pull.Title != want {
		t.Errorf("title = %q, want %q", pull.Title, want)
	}
	_, added := f.pullDiffLines(pull.Number)
	if diff := cmp.Diff([]string{"- image: " + a + ":main@" + a2, "- image: " + b + ":main@" + b2}, added); diff != "" {
		t.Errorf("grouped diff (-want +got):\n%s", diff)
	}

	// CI promotes c; then c's tag moves. With per-image grouping drift
	// would use c's branch, which holds CI's open promotion: it skips it.
	// (CI's tag is main too: a digest belongs to one tag variant.)
	c2 := f.pushImage(c, "main", time.Time{})
	if _, err := Run(ctx, f.env(), Request{Inputs: []Input{{Image: c, Tags: []string{"main"}, Digest: c2, Source: pr.SourceDigestFile}}}); err != nil {
		t.Fatal(err)
	}
	f.pushImage(c, "main", time.Time{})
	rep, err = Drift(ctx, f.env(), DriftOptions{Group: GroupImage})
	if err != nil {
		t.Fatal(err)
	}
	var statuses []string
	for _, r := range rep.Results {
		statuses = append(statuses, string(r.Status)+" "+r.Branch)
	}
	sort.Strings(statuses)
	want := []string{
		"opened " + pr.Branch("pinbot/", "default", a),
		"opened " + pr.Branch("pinbot/", "default", b),
		"skipped " + pr.Branch("pinbot/", "default", c),
	}
	if diff := cmp.Diff(want, statuses); diff != "" {
		t.Errorf("per-image drift with a promotion open (-want +got):\n%s", diff)
	}
	promo, err := f.forge.OpenPull(context.Background(), f.repo, pr.Branch("pinbot/", "default", c))
	if err != nil || promo == nil || !strings.Contains(promo.Body, c2) {
		t.Errorf("CI's pull request was touched: %+v, %v", promo, err)
	}
}
