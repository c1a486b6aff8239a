package gitea

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"

	"pinbot.dev/pinbot/gitforge"
)

// PushDir commits the files under dir, as they are, as a single parentless
// commit and force-pushes it to branch of owner/name, replacing the branch.
// It returns the commit SHA. dir itself is left untouched (no .git is
// written into it), so a testdata tree can be pushed directly.
func (s *Server) PushDir(ctx context.Context, owner, name, branch, dir, message string) (string, error) {
	repo, err := git.Init(memory.NewStorage(), osfs.New(dir))
	if err != nil {
		return "", fmt.Errorf("pushing %s: %w", dir, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", fmt.Errorf("pushing %s: %w", dir, err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return "", fmt.Errorf("staging %s: %w", dir, err)
	}
	sig := &object.Signature{Name: "pinbot test", Email: "test@pinbot.dev", When: time.Now()}
	h, err := wt.Commit(message, &git.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true})
	if err != nil {
		return "", fmt.Errorf("committing %s: %w", dir, err)
	}
	ref := plumbing.NewBranchReferenceName(branch)
	if err := repo.Storer.SetReference(plumbing.NewHashReference(ref, h)); err != nil {
		return "", fmt.Errorf("pushing %s: %w", dir, err)
	}
	if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{s.RepoURL(owner, name)}}); err != nil {
		return "", fmt.Errorf("pushing %s: %w", dir, err)
	}
	if err := repo.PushContext(ctx, &git.PushOptions{
		RemoteName: "origin",
		RefSpecs:   []gitconfig.RefSpec{gitconfig.RefSpec(fmt.Sprintf("+%s:%s", ref, ref))},
		Auth:       s.GitAuth(),
		CABundle:   s.caBundle(),
	}); err != nil && err != git.NoErrAlreadyUpToDate {
		return "", fmt.Errorf("pushing %s to %s/%s branch %s: %w", dir, owner, name, branch, err)
	}
	if err := s.waitBranch(ctx, owner, name, branch, h.String()); err != nil {
		return "", err
	}
	return h.String(), nil
}

// waitBranch waits until the API shows branch at sha. Gitea records a push
// (and that a repository is no longer empty) in a queue after the push
// returns; until then the API can 404 or even fail with a 500 on the new
// branch.
func (s *Server) waitBranch(ctx context.Context, owner, name, branch, sha string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := s.Client(ctx)
		if err != nil {
			return err
		}
		b, _, err := c.GetRepoBranch(owner, name, branch)
		if err == nil && b.Commit != nil && b.Commit.ID == sha {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s/%s branch %s to show %s: %w", owner, name, branch, sha, errors.Join(err, ctx.Err()))
		case <-tick.C:
		}
	}
}

// GitAuth is go-git basic auth as the admin, with the admin token.
func (s *Server) GitAuth() *githttp.BasicAuth {
	return &githttp.BasicAuth{Username: s.AdminUser, Password: s.Token}
}

func (s *Server) caBundle() []byte {
	if s.CAFile == "" {
		return nil
	}
	pem, _ := os.ReadFile(s.CAFile) // read at Start already; cannot vanish
	return pem
}

// DockerConfig writes a Docker config.json that logs in to the container
// registry (RegistryHost) as the admin, and returns its directory: set
// DOCKER_CONFIG to it, and authn.DefaultKeychain (or a docker CLI) uses it.
func (s *Server) DockerConfig() (string, error) {
	dir := filepath.Join(s.Dir, "docker")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("writing docker config: %w", err)
	}
	auth := base64.StdEncoding.EncodeToString([]byte(s.AdminUser + ":" + s.Token))
	raw, err := json.MarshalIndent(map[string]any{
		"auths": map[string]any{s.RegistryHost: map[string]string{"auth": auth}},
	}, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o600); err != nil {
		return "", fmt.Errorf("writing docker config: %w", err)
	}
	return dir, nil
}

// Commit commits files (slash paths to content; new files are added) on
// top of the head of base of owner/name and pushes the commit to branch:
// base itself to advance it, another name to open a branch from it. It
// reads and writes Git objects as pinbot does (no checkout) and returns
// the commit SHA once the API shows it.
func (s *Server) Commit(ctx context.Context, owner, name, base, branch string, files map[string]string, message string) (string, error) {
	return s.CommitAs(ctx, s.Token, owner, name, base, branch, files, message)
}

// CommitAs is Commit as the user whose API token is token: a write
// collaborator pushing to any branch she may push to.
func (s *Server) CommitAs(ctx context.Context, token, owner, name, base, branch string, files map[string]string, message string) (string, error) {
	cache, err := gitforge.NewCache("")
	if err != nil {
		return "", err
	}
	repo, err := cache.Repository(s.RepoURL(owner, name))
	if err != nil {
		return "", err
	}
	auth := gitforge.Auth{Token: token, CAFile: s.CAFile}
	snap, err := repo.Fetch(ctx, base, auth)
	if err != nil {
		return "", err
	}
	changes := make(map[string][]byte, len(files))
	for p, content := range files {
		changes[p] = []byte(content)
	}
	c, err := snap.Edit(changes, message, gitforge.Signature{Name: "pinbot test", Email: "test@pinbot.dev"})
	if err != nil {
		return "", fmt.Errorf("committing to %s/%s: %w", owner, name, err)
	}
	if err := c.Push(ctx, branch, branch != base, auth); err != nil {
		return "", err
	}
	if err := s.waitBranch(ctx, owner, name, branch, c.Commit()); err != nil {
		return "", err
	}
	return c.Commit(), nil
}
