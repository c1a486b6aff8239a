package registry

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// sessions holds one authenticated session per registry host.
//
// A session is go-containerregistry's own handshake, made once per
// registry rather than once per repository: transport.NewWithContext pings
// the registry and, behind a bearer challenge, exchanges the credentials
// for one token carrying a pull scope for every repository asked for so far
// (the token endpoint takes several scope parameters). The resulting
// transport.Wrapper is shared by every repository of the registry. Where
// the token serves them all (Gitea's does), each further call costs only
// its own requests. Where a registry scopes tokens per repository, its 401
// names the missing scope, and go-containerregistry's bearer transport adds
// it to the scopes it holds and fetches one token for all of them.
type sessions struct {
	mu     sync.Mutex
	byHost map[string]*session
}

type session struct {
	handshake chan struct{}   // one slot, held while the handshake runs
	puller    *remote.Puller  // nil until a handshake succeeds; guarded by sessions.mu
	scopes    map[string]bool // pull scopes asked for; guarded by sessions.mu
}

// pullerFor returns the Puller for repo's registry, making the handshake
// when the registry has none yet. A failed handshake is not kept: the next
// call tries again.
func (c *Client) pullerFor(ctx context.Context, repo name.Repository) (*remote.Puller, error) {
	host := repo.RegistryStr()
	s := c.sessions.note(host, repo.Scope(transport.PullScope))
	if p := c.sessions.puller(s); p != nil {
		return p, nil
	}
	select {
	case s.handshake <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the handshake with %s: %w", host, context.Cause(ctx))
	}
	defer func() { <-s.handshake }()
	if p := c.sessions.puller(s); p != nil {
		return p, nil // made by the call that held the slot before
	}
	auth, err := authn.Resolve(ctx, c.keychain, repo.Registry)
	if err != nil {
		return nil, err
	}
	scopes := c.sessions.scopesOf(s, repo.Scope(transport.PullScope))
	rt, err := transport.NewWithContext(ctx, repo.Registry, auth, c.rt, scopes)
	if err != nil && c.creds.forgeTokenRefused(host, err) {
		// A forge token without read:package is refused even where
		// anyone may read: read as anyone.
		if anon, aerr := transport.NewWithContext(ctx, repo.Registry, authn.Anonymous, c.rt, scopes); aerr == nil {
			c.creds.used.Store(canonicalHost(host), "")
			rt, err = anon, nil
		}
	}
	if err != nil {
		return nil, err
	}
	// rt is a *transport.Wrapper: remote adds no transport of its own
	// (retries, user agent and logging are all below, in c.rt).
	p, err := remote.NewPuller(remote.WithTransport(rt))
	if err != nil {
		return nil, fmt.Errorf("starting a session with %s: %w", host, err)
	}
	c.sessions.mu.Lock()
	s.puller = p
	c.sessions.mu.Unlock()
	return p, nil
}

// note returns host's session, made if need be, and adds scope to the
// scopes its handshake asks for.
func (ss *sessions) note(host, scope string) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.byHost[host]
	if !ok {
		s = &session{handshake: make(chan struct{}, 1), scopes: map[string]bool{}}
		ss.byHost[host] = s
	}
	if s.puller == nil {
		s.scopes[scope] = true
	}
	return s
}

func (ss *sessions) puller(s *session) *remote.Puller {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return s.puller
}

// scopesOf lists s's scopes, first then the others in a stable order:
// some registries read only the first scope parameter of a token request.
func (ss *sessions) scopesOf(s *session, first string) []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := make([]string, 0, len(s.scopes))
	for sc := range s.scopes {
		if sc != first {
			out = append(out, sc)
		}
	}
	slices.Sort(out)
	return append([]string{first}, out...)
}
