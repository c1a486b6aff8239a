package serve

import (
	"context"
	"testing"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
)

// insiderRig is the insider suite's setting: a manifest repository on a
// real Gitea, pinbot's client of it (the admin), and a write
// collaborator, mallory, with her own client.
type insiderRig struct {
	srv         *gitea.Server
	repo        gitforge.Repo
	mallory     gitea.User
	forge, hers *gitforge.Gitea
}

// newInsiderRig starts Gitea with the repository owner/manifests holding
// files on main, and mallory as its writer.
func newInsiderRig(t *testing.T, files map[string]string) *insiderRig {
	t.Helper()
	ctx := context.Background()
	r := &insiderRig{srv: giteatest.Start(t, gitea.Options{})}
	r.repo = gitforge.Repo{Owner: r.srv.AdminUser, Name: "manifests"}
	if _, err := r.srv.CreateRepoWith(ctx, r.repo.Owner, r.repo.Name, "main", files); err != nil {
		t.Fatal(err)
	}
	var err error
	if r.mallory, err = r.srv.CreateUser(ctx, "mallory"); err != nil {
		t.Fatal(err)
	}
	if err := r.srv.AddWriter(ctx, r.repo.Owner, r.repo.Name, r.mallory.Name); err != nil {
		t.Fatal(err)
	}
	if r.forge, err = gitforge.NewGitea(r.srv.URL, r.srv.Token); err != nil {
		t.Fatal(err)
	}
	if r.hers, err = gitforge.NewGitea(r.srv.URL, r.mallory.Token); err != nil {
		t.Fatal(err)
	}
	return r
}
