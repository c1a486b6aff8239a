package gitea

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	sdk "code.gitea.io/sdk/gitea"
)

// Client returns a Gitea SDK client acting as the admin, bound to ctx. Make
// one per operation (or per goroutine): the SDK keeps the context in the
// client.
func (s *Server) Client(ctx context.Context) (*sdk.Client, error) {
	return s.clientAs(ctx, s.Token)
}

// ClientAs is Client acting as the user whose API token is token.
func (s *Server) ClientAs(ctx context.Context, token string) (*sdk.Client, error) {
	return s.clientAs(ctx, token)
}

func (s *Server) clientAs(ctx context.Context, token string) (*sdk.Client, error) {
	c, err := sdk.NewClient(s.URL,
		sdk.SetToken(token),
		sdk.SetHTTPClient(s.client),
		sdk.SetContext(ctx),
		sdk.SetGiteaVersion(s.Version), // known since Start: no version probe
	)
	if err != nil {
		return nil, fmt.Errorf("making a Gitea client: %w", err)
	}
	return c, nil
}

// User is an ordinary Gitea user made by CreateUser.
type User struct {
	Name, Email, Password string
	// Token is an API token of the user with every scope.
	Token string
}

// CreateUser creates an active, ordinary user with a random password and
// an API token.
func (s *Server) CreateUser(ctx context.Context, name string) (User, error) {
	c, err := s.Client(ctx)
	if err != nil {
		return User{}, err
	}
	u := User{Name: name, Email: name + "@example.com", Password: "pw-" + hexString(12)}
	mustChange := false
	if _, _, err := c.AdminCreateUser(sdk.CreateUserOption{
		Username:           u.Name,
		Email:              u.Email,
		Password:           u.Password,
		MustChangePassword: &mustChange,
		SendNotify:         false,
	}); err != nil {
		return User{}, fmt.Errorf("creating Gitea user %s: %w", name, err)
	}
	if u.Token, err = s.createToken(ctx, u.Name, u.Password); err != nil {
		return User{}, fmt.Errorf("creating a token for Gitea user %s: %w", name, err)
	}
	return u, nil
}

// CreateOrg creates a public organisation owned by the admin.
func (s *Server) CreateOrg(ctx context.Context, name string) error {
	c, err := s.Client(ctx)
	if err != nil {
		return err
	}
	if _, _, err := c.CreateOrg(sdk.CreateOrgOption{Name: name, Visibility: sdk.VisibleTypePublic}); err != nil {
		return fmt.Errorf("creating Gitea organisation %s: %w", name, err)
	}
	return nil
}

// CreateRepo creates an empty public repository owner/name (owner is a
// user or an organisation) whose default branch will be defaultBranch.
// Give it content with PushDir.
func (s *Server) CreateRepo(ctx context.Context, owner, name, defaultBranch string) error {
	c, err := s.Client(ctx)
	if err != nil {
		return err
	}
	if _, _, err := c.AdminCreateRepo(owner, sdk.CreateRepoOption{
		Name:          name,
		DefaultBranch: defaultBranch,
	}); err != nil {
		return fmt.Errorf("creating Gitea repository %s/%s: %w", owner, name, err)
	}
	return nil
}

// CreateRepoFromDir creates owner/name with dir's files as the first commit
// on branch, which becomes the default branch, and returns that commit.
func (s *Server) CreateRepoFromDir(ctx context.Context, owner, name, branch, dir string) (string, error) {
	if err := s.CreateRepo(ctx, owner, name, branch); err != nil {
		return "", err
	}
	return s.PushDir(ctx, owner, name, branch, dir, "Initial content")
}

// CreateRepoWith creates owner/name with files (slash paths to content)
// as the first commit on branch, which becomes the default branch, and
// returns that commit.
func (s *Server) CreateRepoWith(ctx context.Context, owner, name, branch string, files map[string]string) (string, error) {
	dir, err := os.MkdirTemp("", "pinbot-gitea-tree-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	for p, content := range files {
		f := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	return s.CreateRepoFromDir(ctx, owner, name, branch, dir)
}

// RepoURL returns the clone URL of owner/name (no credentials in it).
func (s *Server) RepoURL(owner, name string) string {
	return fmt.Sprintf("%s/%s/%s.git", s.URL, owner, name)
}

// MergePull merges pull request number of owner/name as a reviewer would
// (a merge commit), waiting while Gitea still checks its mergeability, and
// returns the merge commit SHA.
func (s *Server) MergePull(ctx context.Context, owner, name string, number int64) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := s.Client(ctx)
		if err != nil {
			return "", err
		}
		ok, resp, err := c.MergePullRequest(owner, name, number, sdk.MergePullRequestOption{Style: sdk.MergeStyleMerge})
		// While Gitea still checks mergeability it answers 405 "Please try
		// again later"; the SDK reports that as not merged, with or
		// without an error.
		retry := resp != nil && resp.StatusCode == http.StatusMethodNotAllowed
		switch {
		case retry:
		case err == nil && ok:
			pr, _, err := c.GetPullRequest(owner, name, number)
			if err != nil {
				return "", fmt.Errorf("reading merged pull request %s/%s#%d: %w", owner, name, number, err)
			}
			if pr.MergedCommitID == nil {
				return "", fmt.Errorf("merged pull request %s/%s#%d has no merge commit", owner, name, number)
			}
			return *pr.MergedCommitID, nil
		case err == nil:
			return "", fmt.Errorf("merging pull request %s/%s#%d: Gitea did not merge it", owner, name, number)
		default:
			return "", fmt.Errorf("merging pull request %s/%s#%d: %w", owner, name, number, err)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("merging pull request %s/%s#%d: still not mergeable: %w", owner, name, number, errors.Join(err, ctx.Err()))
		case <-tick.C:
		}
	}
}

// AddWriter makes user a collaborator of owner/name who may write (push
// to any unprotected branch, open and edit pull requests, post commit
// statuses) and is no admin: the insider of pinbot's threat model.
func (s *Server) AddWriter(ctx context.Context, owner, name, user string) error {
	c, err := s.Client(ctx)
	if err != nil {
		return err
	}
	write := sdk.AccessModeWrite
	if _, err := c.AddCollaborator(owner, name, user, sdk.AddCollaboratorOption{Permission: &write}); err != nil {
		return fmt.Errorf("adding %s as a writer of %s/%s: %w", user, owner, name, err)
	}
	return nil
}
