package imagebuild

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGit(t *testing.T) {
	dir := t.TempDir()
	gitIn := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %s: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gitIn("init", "-q")
	gitIn("commit", "-q", "--allow-empty", "-m", "one")
	gitIn("tag", "v0.3.0")
	sha := gitIn("rev-parse", "HEAD")
	ctx := context.Background()

	got, err := Git(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(GitFacts{Revision: sha, Version: "v0.3.0"}, got); diff != "" {
		t.Errorf("without origin (-want +got):\n%s", diff)
	}

	gitIn("remote", "add", "origin", "https://bot:s3cret-token@gitea.example/platform/pinbot.git")
	gitIn("commit", "-q", "--allow-empty", "-m", "two")
	sha = gitIn("rev-parse", "HEAD")
	got, err = Git(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := GitFacts{Revision: sha, Source: "https://gitea.example/platform/pinbot.git", Version: "v0.3.0-1-g" + sha[:7]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("with origin (-want +got):\n%s", diff)
	}

	if _, err := Git(ctx, t.TempDir()); err == nil || !strings.Contains(err.Error(), "git rev-parse HEAD") {
		t.Errorf("outside a work tree: error %v, want one naming git rev-parse HEAD", err)
	}
}
