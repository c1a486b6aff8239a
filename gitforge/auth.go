package gitforge

import (
	"errors"
	"fmt"
	"os"
	"time"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
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

// ResponseTimeout bounds how long one request to the forge, Git or API,
// waits for the server to start answering. A forge that accepts the
// connection and never answers fails the call after it, rather than
// hanging pinbot. A clone or fetch that streams data takes as long as it
// needs: only a server that says nothing at all is cut off (see
// internal/httpbound).
const ResponseTimeout = 60 * time.Second

// ErrNoChanges is returned by Snapshot.Edit when the changes change
// nothing.
var ErrNoChanges = errors.New("nothing to commit: the changes leave the tree as it was")

// ErrPushRejected is returned by Push when the remote branch moved in a way
// that a non-forced push cannot follow (not a fast-forward), or the server
// refused the update. Callers fetch, regenerate and retry.
var ErrPushRejected = errors.New("push rejected")

// Signature names the author (and committer) of a commit.
type Signature struct {
	Name, Email string
	// When is the commit time; the current time when zero.
	When time.Time
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
