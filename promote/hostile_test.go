package promote

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/promote/pr"
)

// TestPromoteHostileRepository promotes into a repository built to make
// pinbot write or read outside it: links to a pinned file outside it
// (absolute and relative), to a directory outside and to /dev/zero, a
// journal of the old protocol planted in the tree, a tracked file named
// like a staged file, a file over the size cap and one named with a
// space. The promotion changes the repository's own pins and nothing
// else; the repository's files all stay; nothing outside is touched; and
// the cache holds Git objects, no checkout.
func TestPromoteHostileRepository(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	app := f.image("app")
	v1 := f.pushImage(app, "v1", time.Time{})
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim.yaml")
	victimBody := "image: " + app + ":v1@" + v1 + "\n"
	if err := os.WriteFile(victim, []byte(victimBody), 0o644); err != nil {
		t.Fatal(err)
	}
	pin := "image: " + app + ":v1@" + v1 + "\n"
	files := map[string]string{
		"deploy/app.yaml":                pin,
		"deploy/odd name.yaml":           pin,
		"deploy/.app.yaml.pinbot-123456": "the repository's notes\n",
		".pinbot-journal":                `{"version":1,"phase":"committing","files":[{"file":"../` + filepath.Base(outside) + `/victim.yaml"}]}`,
		"deploy/huge.yaml":               pin + strings.Repeat("# padding\n", (17<<20)/10),
		"deploy/abs.yaml":                "symlink:" + victim,
		"deploy/rel.yaml":                "symlink:../../../../../../../../.." + victim,
		"deploy/outside":                 "symlink:" + outside,
		"deploy/zero.yaml":               "symlink:/dev/zero",
	}
	f.createRepo(files)
	env := f.env()
	env.CacheDir = t.TempDir()
	v2 := f.pushImage(app, "v2", time.Time{})
	res, err := Run(ctx, env, Request{Inputs: []Input{{Image: app, Tags: []string{"v2"}, Digest: v2, Source: pr.SourceFlag}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Status != StatusOpened {
		t.Fatalf("results %+v, want one opened pull request", res)
	}
	var changed []string
	for _, c := range res[0].Meta.Changes {
		changed = append(changed, c.File)
	}
	slices.Sort(changed)
	if want := []string{"deploy/app.yaml", "deploy/odd name.yaml"}; !slices.Equal(changed, want) {
		t.Errorf("changed %q, want %q", changed, want)
	}
	branch := res[0].Branch
	for _, p := range []string{"deploy/.app.yaml.pinbot-123456", ".pinbot-journal"} {
		if got := f.file(branch, p); got != files[p] {
			t.Errorf("%s on the branch = %q, want the repository's %q", p, got, files[p])
		}
	}
	if got := f.file(branch, "deploy/app.yaml"); !strings.Contains(got, v2) {
		t.Errorf("deploy/app.yaml on the branch = %q, want it pinned to v2", got)
	}
	if b, _ := os.ReadFile(victim); string(b) != victimBody {
		t.Errorf("the file outside the repository was changed: %q", b)
	}
	// The cache is Git's objects: no file of the repository is on disk.
	filepath.WalkDir(env.CacheDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && (strings.HasSuffix(p, ".yaml") || d.Type()&fs.ModeSymlink != 0) {
			t.Errorf("the cache holds %s: a checkout", p)
		}
		return nil
	})
}

// TestPromoteConfigLink: a .pinbot.yaml that is a link (to a file outside
// the repository, say) is refused, naming it, and nothing is written.
func TestPromoteConfigLink(t *testing.T) {
	f := newFixture(t)
	app := f.image("app")
	v1 := f.pushImage(app, "v1", time.Time{})
	f.createRepo(map[string]string{"app.yaml": "image: " + app + ":v1@" + v1 + "\n", ConfigFile: "symlink:/etc/passwd"})
	v2 := f.pushImage(app, "v2", time.Time{})
	_, err := Run(context.Background(), f.env(), Request{Inputs: []Input{{Image: app, Tags: []string{"v2"}, Digest: v2, Source: pr.SourceFlag}}})
	if err == nil || !strings.Contains(err.Error(), ConfigFile) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("Run = %v, want .pinbot.yaml refused as a link", err)
	}
	if strings.Contains(err.Error(), "root:") {
		t.Errorf("the error shows the link's target's content: %v", err)
	}
	if got := f.branches(); !slices.Equal(got, []string{"main"}) {
		t.Errorf("branches = %q, want main alone", got)
	}
}
