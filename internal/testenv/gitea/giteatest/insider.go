package giteatest

import (
	"context"
	"testing"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/gitea"
)

// Insider is a real Gitea with the repository ADMIN/manifests, and
// mallory: a writer of it who is no admin, the insider pinbot's gate is
// built against. Forge is pinbot's client (the admin's token), Hers is
// mallory's.
type Insider struct {
	Srv         *gitea.Server
	Repo        gitforge.Repo
	Mallory     gitea.User
	Forge, Hers *gitforge.Gitea
}

// NewInsider starts Gitea with the repository holding files on main, and
// mallory as its writer.
func NewInsider(tb testing.TB, files map[string]string) *Insider {
	tb.Helper()
	ctx := context.Background()
	r := &Insider{Srv: Start(tb, gitea.Options{})}
	r.Repo = gitforge.Repo{Owner: r.Srv.AdminUser, Name: "manifests"}
	if _, err := r.Srv.CreateRepoWith(ctx, r.Repo.Owner, r.Repo.Name, "main", files); err != nil {
		tb.Fatal(err)
	}
	var err error
	if r.Mallory, err = r.Srv.CreateUser(ctx, "mallory"); err != nil {
		tb.Fatal(err)
	}
	if err := r.Srv.AddWriter(ctx, r.Repo.Owner, r.Repo.Name, r.Mallory.Name); err != nil {
		tb.Fatal(err)
	}
	if r.Forge, err = gitforge.NewGitea(r.Srv.URL, r.Srv.Token); err != nil {
		tb.Fatal(err)
	}
	if r.Hers, err = gitforge.NewGitea(r.Srv.URL, r.Mallory.Token); err != nil {
		tb.Fatal(err)
	}
	return r
}
