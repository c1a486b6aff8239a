package gitforge

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/file"

	"pinbot.dev/pinbot/internal/capool"
	"pinbot.dev/pinbot/internal/httpbound"
	"pinbot.dev/pinbot/internal/peermetrics"
	"pinbot.dev/pinbot/internal/redact"
)

// gitTransport is the Git transport of url with auth: smart HTTP over a
// client of its own (the CA bundle, response headers bounded by
// ResponseTimeout), or go-git's local transport for file:// URLs. Nothing
// process-wide is changed.
func gitTransport(url string, auth Auth) (transport.Transport, *transport.Endpoint, error) {
	ep, err := transport.NewEndpoint(url)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", redact.URL(url), err)
	}
	switch ep.Protocol {
	case "http", "https":
		pem, err := auth.caBundle()
		if err != nil {
			return nil, nil, err
		}
		t, err := httpTransport(auth.CAFile, pem)
		if err != nil {
			return nil, nil, err
		}
		return githttp.NewClientWithOptions(&http.Client{Transport: peermetrics.Git(t)}, nil), ep, nil
	case "file":
		return file.DefaultClient, ep, nil
	}
	return nil, nil, fmt.Errorf("%s: Git over %s is not supported (use https)", redact.URL(url), ep.Protocol)
}

// transports are the Git HTTP transports, one per CA bundle (by its
// content; "" for the system's roots), so that every fetch reuses the
// keep-alive connections of the ones before instead of leaving a
// transport with its idle connections behind.
var transports sync.Map // string -> *http.Transport

// httpTransport is the shared transport that trusts pem (read from
// caFile), or the system's roots when pem is nil.
func httpTransport(caFile string, pem []byte) (*http.Transport, error) {
	if t, ok := transports.Load(string(pem)); ok {
		return t.(*http.Transport), nil
	}
	t := httpbound.Transport(ResponseTimeout)
	if pem != nil {
		pool, err := capool.FromPEM(caFile, pem)
		if err != nil {
			return nil, err
		}
		t.TLSClientConfig = capool.TLS(pool)
	}
	got, _ := transports.LoadOrStore(string(pem), t)
	return got.(*http.Transport), nil
}

// advertised asks the remote which references it has, in a session to
// read from it.
func advertised(ctx context.Context, url string, auth Auth) (transport.UploadPackSession, *packp.AdvRefs, error) {
	return session(ctx, url, auth, transport.Transport.NewUploadPackSession)
}

// receiving is advertised in a session to push to the remote.
func receiving(ctx context.Context, url string, auth Auth) (transport.ReceivePackSession, *packp.AdvRefs, error) {
	return session(ctx, url, auth, transport.Transport.NewReceivePackSession)
}

// session opens a session to url with open and reads the references the
// remote advertises.
func session[S transport.Session](ctx context.Context, url string, auth Auth, open func(transport.Transport, *transport.Endpoint, transport.AuthMethod) (S, error)) (S, *packp.AdvRefs, error) {
	var none S
	redact.Register(auth.Token)
	tr, ep, err := gitTransport(url, auth)
	if err != nil {
		return none, nil, err
	}
	sess, err := open(tr, ep, auth.method())
	if err != nil {
		return none, nil, classify(err)
	}
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		sess.Close()
		return none, nil, classify(err)
	}
	return sess, ar, nil
}

// RemoteHead returns the commit branch points at on the remote at url now,
// as `git ls-remote` does: one request. A branch the remote lacks is
// ErrBranchNotFound.
func RemoteHead(ctx context.Context, url, branch string, auth Auth) (string, error) {
	head, err := remoteHead(ctx, url, branch, auth)
	return head, redact.Error(err)
}

func remoteHead(ctx context.Context, url, branch string, auth Auth) (string, error) {
	heads, err := remoteHeads(ctx, url, auth, branch)
	if err != nil {
		return "", err
	}
	if heads[branch] == "" {
		return "", fmt.Errorf("listing the branches of %s: %w: %s", redact.URL(url), ErrBranchNotFound, branch)
	}
	return heads[branch], nil
}

// RemoteHeads returns the heads of the branches the remote has, of those
// named, in one round trip (a branch it lacks is missing from the map).
func RemoteHeads(ctx context.Context, url string, auth Auth, branches ...string) (map[string]string, error) {
	heads, err := remoteHeads(ctx, url, auth, branches...)
	return heads, redact.Error(err)
}

func remoteHeads(ctx context.Context, url string, auth Auth, branches ...string) (map[string]string, error) {
	sess, ar, err := advertised(ctx, url, auth)
	if err != nil {
		return nil, fmt.Errorf("listing the branches of %s: %w", redact.URL(url), err)
	}
	defer sess.Close()
	refs, err := ar.AllReferences()
	if err != nil {
		return nil, fmt.Errorf("listing the branches of %s: %w", redact.URL(url), err)
	}
	out := make(map[string]string, len(branches))
	for _, b := range branches {
		if ref, err := refs.Reference(plumbing.NewBranchReferenceName(b)); err == nil {
			out[b] = ref.Hash().String()
		}
	}
	return out, nil
}

// DefaultBranch returns the branch the remote's HEAD names, as `git
// ls-remote --symref url HEAD` does: what Argo CD follows for a
// targetRevision of HEAD. A remote that advertises no symbolic HEAD is
// answered by the branch whose commit HEAD is ("main" or "master" first).
func DefaultBranch(ctx context.Context, url string, auth Auth) (string, error) {
	b, err := defaultBranch(ctx, url, auth)
	return b, redact.Error(err)
}

func defaultBranch(ctx context.Context, url string, auth Auth) (string, error) {
	sess, ar, err := advertised(ctx, url, auth)
	if err != nil {
		return "", fmt.Errorf("listing the branches of %s: %w", redact.URL(url), err)
	}
	defer sess.Close()
	return headBranch(url, ar)
}

// headBranch is the branch an advertisement's HEAD names (see
// DefaultBranch).
func headBranch(url string, ar *packp.AdvRefs) (string, error) {
	all, err := ar.AllReferences()
	if err != nil {
		return "", fmt.Errorf("listing the branches of %s: %w", redact.URL(url), err)
	}
	refs, err := all.IterReferences()
	if err != nil {
		return "", err
	}
	var head *plumbing.Reference
	byHash := map[plumbing.Hash][]string{}
	for ref, err := refs.Next(); err == nil; ref, err = refs.Next() {
		switch {
		case ref.Name() == plumbing.HEAD:
			head = ref
		case ref.Name().IsBranch() && ref.Type() == plumbing.HashReference:
			byHash[ref.Hash()] = append(byHash[ref.Hash()], ref.Name().Short())
		}
	}
	switch {
	case head == nil:
		return "", fmt.Errorf("listing the branches of %s: %w: the remote has no HEAD", redact.URL(url), ErrBranchNotFound)
	case head.Type() == plumbing.SymbolicReference && head.Target().IsBranch():
		return head.Target().Short(), nil
	}
	names := byHash[head.Hash()]
	sort.Slice(names, func(i, j int) bool {
		return rank(names[i]) < rank(names[j]) || rank(names[i]) == rank(names[j]) && names[i] < names[j]
	})
	if len(names) == 0 {
		return "", fmt.Errorf("listing the branches of %s: %w: no branch is at HEAD", redact.URL(url), ErrBranchNotFound)
	}
	return names[0], nil
}

func rank(branch string) int {
	switch branch {
	case "main":
		return 0
	case "master":
		return 1
	}
	return 2
}
