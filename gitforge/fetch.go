package gitforge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"pinbot.dev/pinbot/internal/filelock"
	"pinbot.dev/pinbot/internal/redact"
)

// ErrCommitNotFound means the commit asked for is not in the branch's
// history.
var ErrCommitNotFound = errors.New("commit not found in the branch's history")

// maxDeepen bounds how far FetchCommit deepens a branch's history looking
// for a commit.
const maxDeepen = 4096

// Fetch brings the head of branch into the store and returns the snapshot
// at it; branch "" is the remote's default branch (see DefaultBranch),
// read from the same round trip. The fetch is shallow (depth 1) and incremental: the remote sends
// only the objects of the head the store lacks, and nothing at all when
// the store holds the head already. A branch the remote lacks (or an
// empty repository) is ErrBranchNotFound.
func (r *Repository) Fetch(ctx context.Context, branch string, auth Auth) (*Snapshot, error) {
	s, err := r.fetch(ctx, branch, "", auth)
	return s, redact.Error(err)
}

// FetchCommit is Fetch of commit, which must be in branch's history: the
// branch is deepened until the store holds it. A commit not found there is
// ErrCommitNotFound.
func (r *Repository) FetchCommit(ctx context.Context, branch, commit string, auth Auth) (*Snapshot, error) {
	s, err := r.fetch(ctx, branch, commit, auth)
	return s, redact.Error(err)
}

// storeError is a store that cannot give back what it holds or was sent:
// a cache damaged on disk (a truncated pack, a ref to a missing object).
type storeError struct{ err error }

func (e *storeError) Error() string { return "the object cache is damaged: " + e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

func (r *Repository) fetch(ctx context.Context, branch, commit string, auth Auth) (*Snapshot, error) {
	if branch == "" && commit != "" {
		return nil, fmt.Errorf("fetching from %s: empty branch name", redact.URL(r.url))
	}
	asked := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if commit != "" {
		if s, ok := r.snapshotAt(plumbing.NewHash(commit)); ok {
			return s, nil
		}
	}
	// A fetch of the branch, with the same credentials, that began after
	// this one was asked for answers it too: many apps of one repository
	// passing together then cost one round trip, not one each in turn,
	// and none gets a head older than its own request.
	key := fetchKey{branch: branch, auth: auth}
	if f, ok := r.latest[key]; ok && commit == "" && !f.began.Before(asked) {
		s := *f.snap
		return &s, nil
	}
	began := time.Now()
	if r.dir != "" {
		unlock, err := filelock.Lock(ctx, r.dir+".lock")
		if err != nil {
			return nil, fmt.Errorf("fetching %s from %s: %w", branch, redact.URL(r.url), err)
		}
		defer unlock()
	}
	s, err := r.fetchOnce(ctx, branch, commit, auth)
	var damaged *storeError
	if errors.As(err, &damaged) && ctx.Err() == nil {
		// Start the store afresh, as a cold fetch would.
		if rerr := r.reset(); rerr != nil {
			return nil, errors.Join(err, rerr)
		}
		s, err = r.fetchOnce(ctx, branch, commit, auth)
	}
	if err == nil && commit == "" {
		if r.latest == nil {
			r.latest = map[fetchKey]fetched{}
		}
		r.latest[key] = fetched{began: began, snap: s}
	}
	return s, err
}

func (r *Repository) fetchOnce(ctx context.Context, branch, commit string, auth Auth) (s *Snapshot, err error) {
	what := fmt.Sprintf("fetching %s from %s", branch, redact.URL(r.url))
	if branch == "" {
		what = "fetching the default branch from " + redact.URL(r.url)
	}
	defer func() {
		// go-git panics on some damaged packs.
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("%s: %w", what, &storeError{fmt.Errorf("%v", p)})
		}
	}()
	sess, ar, err := advertised(ctx, r.url, auth)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer sess.Close()
	if branch == "" {
		if branch, err = headBranch(r.url, ar); err != nil {
			return nil, err
		}
		if err := r.defaultRef(branch); err != nil {
			return nil, fmt.Errorf("%s: %w", what, &storeError{err})
		}
	}
	refs, err := ar.AllReferences()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	ref, err := refs.Reference(plumbing.NewBranchReferenceName(branch))
	if err != nil || ref.Type() != plumbing.HashReference {
		return nil, fmt.Errorf("%s: %w: %s", what, ErrBranchNotFound, branch)
	}
	head := ref.Hash()
	want := head
	if commit != "" {
		want = plumbing.NewHash(commit)
	}
	for depth := 1; ; depth *= 8 {
		if s, ok := r.snapshotAt(want); ok {
			if err := r.setRemoteRef(branch, head); err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			s.branch = branch
			return s, nil
		}
		if depth > maxDeepen {
			if _, ok := r.snapshotAt(head); !ok {
				return nil, fmt.Errorf("%s: %w", what, &storeError{fmt.Errorf("the head %s was fetched but cannot be read", head)})
			}
			return nil, fmt.Errorf("%s: %w: %s is not within %d commits of %s", what, ErrCommitNotFound, commit, maxDeepen, branch)
		}
		if err := r.uploadPack(ctx, sess, ar, head, depth); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if commit == "" {
			depth = maxDeepen // the head is all Fetch wants
		}
	}
}

// uploadPack fetches the objects of head, depth commits deep, that the
// store lacks, telling the remote which commits it already holds.
//
// A shallow fetch on top of a shallow store gets only what changed when
// the pack may be thin: the new head's parent is cut off, so the remote
// excludes the objects the store holds only when it may send deltas
// against them (git's pack-objects marks a shallow have's tree
// uninteresting for a thin pack alone). go-git does not speak thin packs
// (it filters the capability from every advertisement), so a warm fetch
// over HTTP asks for one itself and stores it object by object, resolving
// the deltas against the store; git servers (Gitea runs git) always offer
// it. Should a server refuse, the fetch is made again without.
func (r *Repository) uploadPack(ctx context.Context, sess transport.UploadPackSession, ar *packp.AdvRefs, head plumbing.Hash, depth int) error {
	shallows, err := r.st.Shallow()
	if err != nil {
		return &storeError{err}
	}
	haves := r.haves()
	thin := len(haves) > 0 && isHTTP(r.url)
	err = r.uploadPackOnce(ctx, sess, ar, head, depth, shallows, haves, thin)
	if err != nil && thin && ctx.Err() == nil && !errors.Is(err, transport.ErrAuthorizationFailed) && !errors.Is(err, transport.ErrAuthenticationRequired) {
		err = r.uploadPackOnce(ctx, sess, ar, head, depth, shallows, haves, false)
	}
	return err
}

func (r *Repository) uploadPackOnce(ctx context.Context, sess transport.UploadPackSession, ar *packp.AdvRefs, head plumbing.Hash, depth int, shallows, haves []plumbing.Hash, thin bool) error {
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	req.Wants = []plumbing.Hash{head}
	req.Depth = packp.DepthCommits(depth)
	req.Shallows = shallows
	req.Haves = haves
	caps := []capability.Capability{capability.Shallow}
	if thin {
		caps = append(caps, capability.ThinPack)
	}
	if ar.Capabilities.Supports(capability.NoProgress) {
		caps = append(caps, capability.NoProgress)
	}
	for _, c := range caps {
		if err := req.Capabilities.Set(c); err != nil {
			return err
		}
	}
	resp, err := sess.UploadPack(ctx, req)
	if errors.Is(err, transport.ErrEmptyUploadPackRequest) {
		return nil // the store holds everything
	}
	if err != nil {
		return classify(err)
	}
	defer resp.Close()
	var body io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		body = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		body = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	if thin {
		// A few objects, some deltas against the store's: parsed one by
		// one into it. (The store's pack writer cannot index a thin pack.)
		p, err := packfile.NewParserWithStorage(packfile.NewScanner(body), r.st)
		if err == nil {
			_, err = p.Parse()
		}
		if err != nil {
			return &storeError{fmt.Errorf("storing the fetched objects: %w", err)}
		}
	} else if err := packfile.UpdateObjectStorage(r.st, body); err != nil && !errors.Is(err, packfile.ErrEmptyPackfile) {
		return &storeError{fmt.Errorf("storing the fetched objects: %w", err)}
	}
	// The shallow boundary moves only once the objects are in.
	if len(resp.Shallows) > 0 {
		if err := r.st.SetShallow(union(shallows, resp.Shallows)); err != nil {
			return &storeError{err}
		}
	}
	return nil
}

func isHTTP(url string) bool {
	return strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://")
}

// haves are the commits the store holds that the remote may share: the
// heads fetched before.
func (r *Repository) haves() []plumbing.Hash {
	var out []plumbing.Hash
	iter, err := r.st.IterReferences()
	if err != nil {
		return nil
	}
	_ = iter.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference && ref.Name().IsRemote() {
			out = append(out, ref.Hash())
		}
		return nil
	})
	return out
}

// setRemoteRef records head as branch's remote head, a have of the next
// fetch.
func (r *Repository) setRemoteRef(branch string, head plumbing.Hash) error {
	return r.st.SetReference(plumbing.NewHashReference(plumbing.NewRemoteReferenceName(git.DefaultRemoteName, branch), head))
}

// defaultRef records branch as the remote's default branch, for Cached.
func (r *Repository) defaultRef(branch string) error {
	return r.st.SetReference(plumbing.NewSymbolicReference(plumbing.NewRemoteHEADReferenceName(git.DefaultRemoteName),
		plumbing.NewRemoteReferenceName(git.DefaultRemoteName, branch)))
}

// Cached returns the snapshot of branch as the store last fetched it
// ("" for the default branch, once fetched as such), without asking the
// remote; false when the store holds none. A caller can read it while
// the fetch that brings the current head is under way, and keep what it
// read when that head is the same.
func (r *Repository) Cached(branch string) (*Snapshot, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := plumbing.NewRemoteReferenceName(git.DefaultRemoteName, branch)
	if branch == "" {
		head, err := r.st.Reference(plumbing.NewRemoteHEADReferenceName(git.DefaultRemoteName))
		if err != nil || head.Type() != plumbing.SymbolicReference {
			return nil, false
		}
		name = head.Target()
		branch = strings.TrimPrefix(name.String(), "refs/remotes/"+git.DefaultRemoteName+"/")
	}
	ref, err := r.st.Reference(name)
	if err != nil || ref.Type() != plumbing.HashReference {
		return nil, false
	}
	s, ok := r.snapshotAt(ref.Hash())
	if ok {
		s.branch = branch
	}
	return s, ok
}

func union(a, b []plumbing.Hash) []plumbing.Hash {
	out := append([]plumbing.Hash(nil), a...)
	seen := map[plumbing.Hash]bool{}
	for _, h := range a {
		seen[h] = true
	}
	for _, h := range b {
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}
