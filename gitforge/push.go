package gitforge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"

	"pinbot.dev/pinbot/internal/commitid"
	"pinbot.dev/pinbot/internal/redact"
)

// Push sends the snapshot's commit to refs/heads/<branch> on the remote,
// with the objects its Edit wrote (the remote holds the rest: the
// parent was fetched from it). With force it replaces whatever the branch
// held; without it the branch must hold the snapshot's parent, else
// ErrPushRejected. Pushing a branch that already holds the commit is not
// an error.
func (s *Snapshot) Push(ctx context.Context, branch string, force bool, auth Auth) error {
	return redact.Error(s.push(ctx, branch, force, auth))
}

func (s *Snapshot) push(ctx context.Context, branch string, force bool, auth Auth) error {
	r := s.repo
	what := fmt.Sprintf("pushing %s to %s", branch, redact.URL(r.url))
	if branch == "" {
		return errors.New("pushing: empty branch name")
	}
	sess, ar, err := receiving(ctx, r.url, auth)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer sess.Close()
	name := plumbing.NewBranchReferenceName(branch)
	old := plumbing.ZeroHash
	if refs, err := ar.AllReferences(); err == nil {
		if ref, err := refs.Reference(name); err == nil {
			old = ref.Hash()
		}
	}
	switch {
	case old == s.commit:
		return nil
	case !force && old != plumbing.ZeroHash && old != s.parent:
		return fmt.Errorf("%s: %w: the branch is at %s, not at %s", what, ErrPushRejected, commitid.Short(old.String()), commitid.Short(s.parent.String()))
	}
	req, err := updateRequest(ar, &packp.Command{Name: name, Old: old, New: s.commit})
	if err != nil {
		return err
	}
	rd, wr := io.Pipe()
	req.Packfile = rd
	encoded := make(chan error, 1)
	go func() {
		r.mu.Lock()
		_, err := packfile.NewEncoder(wr, r.st, false).Encode(s.written, 10)
		r.mu.Unlock()
		encoded <- wr.CloseWithError(err)
	}()
	rs, err := sess.ReceivePack(ctx, req)
	if err != nil {
		_ = rd.Close()
		<-encoded
		return fmt.Errorf("%s: %w", what, pushError(err))
	}
	if err := <-encoded; err != nil {
		return fmt.Errorf("%s: packing the commit: %w", what, err)
	}
	if rs != nil {
		if err := rs.Error(); err != nil {
			return fmt.Errorf("%s: %w", what, pushError(err))
		}
	}
	return nil
}

// pushError marks the remote's refusal of an update ErrPushRejected.
func pushError(err error) error {
	msg := err.Error()
	if strings.Contains(msg, "non-fast-forward") || strings.Contains(msg, "command error on") || strings.Contains(msg, "rejected") {
		return fmt.Errorf("%w: %w", ErrPushRejected, err)
	}
	return classify(err)
}

// DeleteBranch deletes branch on the remote at url when it still points
// at head, as `git push --force-with-lease=branch:head url :branch` does:
// a branch moved since (a pull request's new commits) is kept, and
// reported as ErrPushRejected. A branch already gone is not an error.
func DeleteBranch(ctx context.Context, url, branch, head string, auth Auth) error {
	return redact.Error(deleteBranch(ctx, url, branch, head, auth))
}

func deleteBranch(ctx context.Context, url, branch, head string, auth Auth) error {
	what := fmt.Sprintf("deleting %s of %s", branch, redact.URL(url))
	sess, ar, err := receiving(ctx, url, auth)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer sess.Close()
	name := plumbing.NewBranchReferenceName(branch)
	refs, err := ar.AllReferences()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	ref, err := refs.Reference(name)
	switch {
	case err != nil:
		return nil // gone already
	case ref.Hash().String() != head:
		return fmt.Errorf("%s: %w: it is at %s now, not at %s", what, ErrPushRejected, commitid.Short(ref.Hash().String()), commitid.Short(head))
	case !ar.Capabilities.Supports(capability.DeleteRefs):
		return fmt.Errorf("%s: the remote does not delete branches by push", what)
	}
	req, err := updateRequest(ar, &packp.Command{Name: name, Old: ref.Hash(), New: plumbing.ZeroHash})
	if err != nil {
		return err
	}
	rs, err := sess.ReceivePack(ctx, req)
	if err != nil {
		return fmt.Errorf("%s: %w", what, pushError(err))
	}
	if rs != nil {
		if err := rs.Error(); err != nil {
			return fmt.Errorf("%s: %w", what, pushError(err))
		}
	}
	return nil
}

// updateRequest is the reference update of cmd, asking for a status
// report when the remote gives one.
func updateRequest(ar *packp.AdvRefs, cmd *packp.Command) (*packp.ReferenceUpdateRequest, error) {
	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	req.Commands = []*packp.Command{cmd}
	if ar.Capabilities.Supports(capability.ReportStatus) {
		if err := req.Capabilities.Set(capability.ReportStatus); err != nil {
			return nil, err
		}
	}
	return req, nil
}
