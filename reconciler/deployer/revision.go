package deployer

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrNotDeployed says the deployer has not deployed any revision yet: no
// successful Argo CD sync, no Flux apply.
var ErrNotDeployed = errors.New("nothing deployed yet")

// Revision is the commit a deployer last deployed.
type Revision struct {
	// Commit is the full commit id, lowercase hex; for a chart of a Helm
	// repository (Source.Chart), its version. For a HelmRelease's chart of
	// a GitRepository it is abbreviated (see Abbreviated), or "" when the
	// deployed chart version names no commit.
	Commit string
	// Version is the chart version a HelmRelease of a GitRepository's
	// chart deployed; "" otherwise.
	Version string
	// Ref is the reference Flux names with it ("main",
	// "refs/heads/main"); "" for Argo CD and for a Flux commit-only
	// revision.
	Ref string
}

// AtHead reports whether r is the head commit (a full id), or
// abbreviates it.
func (r Revision) AtHead(head string) bool {
	switch {
	case r.Commit == "":
		return false
	case r.Abbreviated():
		return len(head) > len(r.Commit) && strings.HasPrefix(strings.ToLower(head), r.Commit)
	}
	return strings.EqualFold(r.Commit, head)
}

// Abbreviated reports whether Commit is the first digits of a commit id,
// not the whole.
func (r Revision) Abbreviated() bool { return abbrevCommit.MatchString(r.Commit) }

var abbrevCommit = regexp.MustCompile(`^[0-9a-f]{7,39}$`)

// Deployed is the revision of Argo CD's last successful sync of the
// source s (from Application.Source):
// status.operationState.syncResult.revision when the operation's phase is
// Succeeded, else the newest entry of status.history, which records only
// successful syncs. ErrNotDeployed (wrapped) when there is neither; a
// revision that is not a commit id is a *FieldError.
func (a *Application) Deployed(s Source) (Revision, error) {
	if op := a.Status.OperationState; op != nil && op.Phase == PhaseSucceeded && op.SyncResult != nil {
		rev, field := pick(op.SyncResult.Revision, op.SyncResult.Revisions, s.Index, "status.operationState.syncResult")
		if rev != "" {
			return a.commit(s, field, rev)
		}
	}
	newest := -1
	for i, h := range a.Status.History {
		if newest < 0 || h.ID >= a.Status.History[newest].ID {
			newest = i
		}
	}
	if newest >= 0 {
		h := a.Status.History[newest]
		rev, field := pick(h.Revision, h.Revisions, s.Index, fmt.Sprintf("status.history[%d]", newest))
		if rev != "" {
			return a.commit(s, field, rev)
		}
	}
	return Revision{}, fmt.Errorf("%s: no successful sync: %w", a.Name(), ErrNotDeployed)
}

// pick returns the revision of the followed source: the single one, or
// the index-th of a multi-source Application's list.
func pick(single string, list []string, index int, field string) (string, string) {
	if index < 0 {
		return single, field + ".revision"
	}
	if index < len(list) {
		return list[index], fmt.Sprintf("%s.revisions[%d]", field, index)
	}
	return "", ""
}

// commit reads a revision of the source s: a commit id, or the version
// of a chart of a Helm repository.
func (a *Application) commit(s Source, field, rev string) (Revision, error) {
	if s.Chart != nil {
		return Revision{Commit: rev}, nil
	}
	c := strings.ToLower(rev)
	if !hexCommit.MatchString(c) {
		return Revision{}, &FieldError{Object: a.Name(), Field: field, Reason: fmt.Sprintf("%q is not a commit id", rev)}
	}
	return Revision{Commit: c}, nil
}

// Deployed is the revision Flux last applied (status.lastAppliedRevision),
// or the one it applied and is health-checking, or whose health checks
// failed, once that reconciliation is over (status.lastAttemptedRevision):
// Flux records a revision applied only once its health checks pass, and
// a check on the app's Proof waits on pinbot. ErrNotDeployed (wrapped)
// for none, a *FieldError for a malformed one.
func (k *Kustomization) Deployed() (Revision, error) {
	raw, field := k.Status.LastAppliedRevision, "status.lastAppliedRevision"
	if k.healthChecking() {
		raw, field = k.Status.LastAttemptedRevision, "status.lastAttemptedRevision"
	}
	if raw == "" {
		return Revision{}, fmt.Errorf("%s: no revision applied: %w", k.Name(), ErrNotDeployed)
	}
	r, err := ParseFluxRevision(raw)
	if err != nil {
		return Revision{}, &FieldError{Object: k.Name(), Field: field, Reason: err.Error()}
	}
	return r, nil
}

// ParseFluxRevision reads a Flux source revision: "main@sha1:<commit>",
// "refs/heads/main@sha1:<commit>", "sha1:<commit>" (a commit checkout),
// "sha256:<commit>" for SHA-256 repositories, or the legacy
// "main/<commit>" of Flux before v2.0.
func ParseFluxRevision(s string) (Revision, error) {
	ref, digest := "", s
	if i := strings.LastIndex(s, "@"); i >= 0 {
		ref, digest = s[:i], s[i+1:]
		if ref == "" {
			return Revision{}, fmt.Errorf("%q: empty reference before @", s)
		}
	}
	if algo, hex, ok := strings.Cut(digest, ":"); ok {
		hex = strings.ToLower(hex)
		switch {
		case algo == "sha1" && len(hex) == 40 && hexCommit.MatchString(hex),
			algo == "sha256" && len(hex) == 64 && hexCommit.MatchString(hex):
			return Revision{Commit: hex, Ref: ref}, nil
		}
		return Revision{}, fmt.Errorf("%q: want <ref>@sha1:<40 hex digits>", s)
	}
	if ref == "" {
		if i := strings.LastIndex(s, "/"); i > 0 && hexCommit.MatchString(strings.ToLower(s[i+1:])) {
			return Revision{Commit: strings.ToLower(s[i+1:]), Ref: s[:i]}, nil
		}
	}
	return Revision{}, fmt.Errorf("%q: want <ref>@sha1:<40 hex digits>", s)
}

// healthChecking says whether Flux applied lastAttemptedRevision and runs,
// or ran and failed, its health checks: Healthy says it runs them for
// that revision, or Ready says they failed and no reconciliation is under
// way (at the start of one, Ready still tells of the last).
func (k *Kustomization) healthChecking() bool {
	attempted, reconciling, failed := k.Status.LastAttemptedRevision, false, false
	for _, c := range k.Status.Conditions {
		switch {
		case attempted == "":
		case c.Type == "Healthy" && c.Reason == "Progressing" && strings.Contains(c.Message, attempted):
			return true
		case c.Type == "Reconciling" && c.Status == "True":
			reconciling = true
		case c.Type == "Ready" && c.Reason == "HealthCheckFailed":
			failed = true
		}
	}
	return failed && !reconciling
}
