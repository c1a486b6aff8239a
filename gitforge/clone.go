package gitforge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"pinbot.dev/pinbot/internal/redact"
)

// DefaultUsername is the HTTP basic-auth user sent with a token when Auth
// names none. Gitea accepts any user name next to a valid token.
const DefaultUsername = "pinbot"

// ErrBranchNotFound means the remote has no branch of the requested name,
// or the repository is still empty.
var ErrBranchNotFound = errors.New("branch not found on the remote")

// Auth is how pinbot authenticates to Git over HTTP(S): the token goes as
// the basic-auth password. It is never printed.
type Auth struct {
	// Username sent with the token; DefaultUsername when empty.
	Username string
	// Token is a Gitea access token (or password). Empty means anonymous.
	Token string
	// CAFile is a PEM bundle trusted in addition to the system roots, for a
	// forge behind a private CA or a self-signed certificate.
	CAFile string
}

// String hides the token, so an Auth printed by mistake leaks nothing.
func (a Auth) String() string {
	token := ""
	if a.Token != "" {
		token = "REDACTED"
	}
	return fmt.Sprintf("{Username:%s Token:%s CAFile:%s}", a.Username, token, a.CAFile)
}

func (a Auth) method() transport.AuthMethod {
	if a.Token == "" {
		return nil
	}
	user := a.Username
	if user == "" {
		user = DefaultUsername
	}
	return &githttp.BasicAuth{Username: user, Password: a.Token}
}

// caBundle reads the PEM bundle CAFile names; nil when it names none.
func (a Auth) caBundle() ([]byte, error) {
	if a.CAFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(a.CAFile)
	if err != nil {
		return nil, fmt.Errorf("reading CA bundle: %w", err)
	}
	return pem, nil
}

// Worktree is a shallow, single-branch working copy of one branch of a
// remote repository. Its methods are not safe for concurrent use.
type Worktree struct {
	dir      string
	url      string
	branch   string
	auth     Auth
	caBundle []byte
	repo     *git.Repository
	head     plumbing.Hash
}

// Clone makes dir a shallow (depth 1), single-branch working copy of branch
// at url and returns it.
//
// Clone is idempotent, so dir can be an on-disk cache: when dir already
// holds a clone of url it fetches branch and hard-resets the working copy to
// the remote head (dropping local commits and untracked files) instead of
// cloning again; keep one such directory per (url, branch). A dir that
// holds anything else is an error, and a failed first clone leaves dir empty.
func Clone(ctx context.Context, url, branch, dir string, auth Auth) (*Worktree, error) {
	w, err := clone(ctx, url, branch, dir, auth)
	return w, redact.Error(err)
}

func clone(ctx context.Context, url, branch, dir string, auth Auth) (*Worktree, error) {
	switch {
	case url == "":
		return nil, errors.New("cloning: empty repository URL")
	case branch == "":
		return nil, fmt.Errorf("cloning %s: empty branch name", redact.URL(url))
	case dir == "":
		return nil, fmt.Errorf("cloning %s: empty directory", redact.URL(url))
	}
	redact.Register(auth.Token)
	w := &Worktree{dir: dir, url: url, branch: branch, auth: auth}
	var err error
	if w.caBundle, err = auth.caBundle(); err != nil {
		return nil, err
	}

	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return w.reopen(ctx)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("cloning %s into %s: directory is not empty and holds no clone", redact.URL(url), dir)
	}

	repo, err := git.PlainCloneContext(ctx, dir, false, &git.CloneOptions{
		URL:           url,
		Auth:          auth.method(),
		ReferenceName: plumbing.NewBranchReferenceName(branch),
		SingleBranch:  true,
		Depth:         1,
		Tags:          git.NoTags,
		CABundle:      w.caBundle,
	})
	if err != nil {
		// A failed clone leaves a partial .git behind; remove it so the
		// next attempt starts clean rather than "reopening" garbage.
		_ = os.RemoveAll(filepath.Join(dir, ".git"))
		return nil, fmt.Errorf("cloning %s branch %s: %w", redact.URL(url), branch, classify(err))
	}
	w.repo = repo
	if err := w.readHead(); err != nil {
		return nil, err
	}
	return w, nil
}

// reopen reuses an existing clone in w.dir and brings it up to date.
func (w *Worktree) reopen(ctx context.Context) (*Worktree, error) {
	repo, err := git.PlainOpen(w.dir)
	if err != nil {
		return nil, fmt.Errorf("opening cached clone %s: %w", w.dir, err)
	}
	remote, err := repo.Remote(git.DefaultRemoteName)
	if err != nil {
		return nil, fmt.Errorf("opening cached clone %s: %w", w.dir, err)
	}
	if urls := remote.Config().URLs; len(urls) == 0 || urls[0] != w.url {
		return nil, fmt.Errorf("opening cached clone %s: it is a clone of another remote, not %s", w.dir, redact.URL(w.url))
	}
	w.repo = repo
	if _, err := w.Fetch(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// Dir returns the directory of the working copy.
func (w *Worktree) Dir() string { return w.dir }

// Branch returns the remote branch the working copy tracks.
func (w *Worktree) Branch() string { return w.branch }

// Head returns the commit SHA that HEAD points to.
func (w *Worktree) Head() string { return w.head.String() }

func (w *Worktree) readHead() error {
	ref, err := w.repo.Head()
	if err != nil {
		return fmt.Errorf("reading HEAD of %s: %w", w.dir, err)
	}
	w.head = ref.Hash()
	return nil
}

// classify maps go-git errors callers branch on to this package's
// sentinels: ErrBranchNotFound, and ErrUnauthorized as for the API.
func classify(err error) error {
	var noMatch git.NoMatchingRefSpecError
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository), errors.As(err, &noMatch):
		return fmt.Errorf("%w: %w", ErrBranchNotFound, err)
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		return fmt.Errorf("%w: %w", ErrBranchNotFound, err)
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	return err
}
