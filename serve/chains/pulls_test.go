package chains

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
	"pinbot.dev/pinbot/promote"
)

// TestPullHeadIsReadWithTheBasesRules: on real Gitea, a write
// collaborator's pull requests that escaped the chain before: renaming
// prod in .pinbot.yaml, moving its paths, an ignore marker, a reference
// by tag alone (of the pinned image, or of one prod never pinned), and
// extra pins that outvote the held one. Each head is read with the base's
// .pinbot.yaml, so the bad digest still lands in prod, and what the head
// does to the rules is named. A reference by tag alone the base already
// has, or one in the first environment, which has no gate, is not.
func TestPullHeadIsReadWithTheBasesRules(t *testing.T) {
	ctx := context.Background()
	const good, bad = "sha256:" + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "sha256:" + "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
	config := func(prod, prodPaths string) string {
		return fmt.Sprintf("environments:\n  - name: staging\n    paths: [\"envs/staging/**\"]\n    apps: [web-staging]\n  - name: %s\n    from: staging\n    paths: [\"%s\"]\n    apps: [web-prod]\n", prod, prodPaths)
	}
	pin := func(d string) string { return "image: registry.test/app:v1@" + d + "\n" }
	r := giteatest.NewInsider(t, map[string]string{
		".pinbot.yaml": config("prod", "envs/prod/**"), "envs/staging/app.yaml": pin(good), "envs/prod/app.yaml": pin(good),
		"envs/prod/tools.yaml": "image: registry.test/tools:1.0\n",
	})
	srv, repo, mallory, forge := r.Srv, r.Repo, r.Mallory, r.Forge
	env := promote.Env{Forge: forge, Repo: repo, CloneURL: srv.RepoURL(repo.Owner, repo.Name), Auth: gitforge.Auth{Token: srv.Token}}
	base, err := promote.ReadInventory(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name      string
		files     map[string]string
		wantPin   bool   // the bad digest is read as pinned in prod
		wantLoose string // in prod's loose pins
		wantChain string
	}{
		{name: "prod renamed", files: map[string]string{".pinbot.yaml": config("production", "envs/prod/**"), "envs/prod/app.yaml": pin(bad)}, wantPin: true, wantChain: "adds production and removes prod"},
		{name: "prod's paths moved", files: map[string]string{".pinbot.yaml": config("prod", "elsewhere/**"), "envs/prod/app.yaml": pin(bad)}, wantPin: true, wantChain: "changes the settings of prod"},
		{name: "an ignore marker", files: map[string]string{"envs/prod/app.yaml": "image: registry.test/app:v1@" + bad + " # pinbot: ignore\n"}, wantLoose: "pinbot: ignore"},
		{name: "a reference by tag alone", files: map[string]string{"envs/prod/app.yaml": "image: registry.test/app:v2\n"}, wantLoose: "registry.test/app: the base pins sha256:aaaaaaaaaaaa, the head pins no digest of it"},
		{name: "a reference by tag alone of an image prod never pinned", files: map[string]string{"envs/prod/side.yaml": "containers:\n- image: registry.test/other:v2\n"}, wantLoose: "envs/prod/side.yaml: registry.test/other:v2 by tag alone"},
		{name: "a reference with neither tag nor digest", files: map[string]string{"envs/prod/side.yaml": "image: registry.test/other\n"}, wantLoose: "envs/prod/side.yaml: registry.test/other by tag alone"},
		{name: "the base's own reference by tag alone, and one in staging", files: map[string]string{"envs/staging/side.yaml": "image: registry.test/other:v2\n", "envs/staging/app.yaml": pin(bad)}},
		{name: "two extra pins outvote the held one", files: map[string]string{"envs/prod/app.yaml": pin(bad), "envs/prod/b.yaml": pin(good), "envs/prod/c.yaml": pin(good)}, wantPin: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			branch := fmt.Sprintf("shape-%d", i)
			if _, err := srv.CommitAs(ctx, mallory.Token, repo.Owner, repo.Name, "main", branch, tc.files, tc.name); err != nil {
				t.Fatal(err)
			}
			h, err := ReadPullHead(ctx, env, branch, base)
			if err != nil {
				t.Fatal(err)
			}
			pinned := false
			for _, d := range h.Pinned["prod"]["registry.test/app"] {
				pinned = pinned || d == bad
			}
			if pinned != tc.wantPin {
				t.Errorf("the bad digest read as pinned in prod: %v, want %v (%+v)", pinned, tc.wantPin, h.Pinned)
			}
			if loose := strings.Join(h.Loose["prod"], "; "); (tc.wantLoose == "") != (loose == "") || !strings.Contains(loose, tc.wantLoose) {
				t.Errorf("prod's loose pins %q, want %q", loose, tc.wantLoose)
			}
			if loose := h.Loose["staging"]; len(loose) > 0 {
				t.Errorf("staging's loose pins %q, want none: the first environment has no gate", loose)
			}
			if !strings.Contains(h.ChainChange, tc.wantChain) || (tc.wantChain == "") != (h.ChainChange == "") {
				t.Errorf("ChainChange = %q, want %q", h.ChainChange, tc.wantChain)
			}
		})
	}
}
