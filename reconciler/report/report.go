// Package report says what pinbot proved where people look: the commit
// status pinbot/<app> on the synced commit, and a comment with the proof
// on the promotion pull request that merged it.
package report

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/utils/lru"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/commitid"
	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// Forge is the part of *gitforge.Gitea the reconciler reports through.
type Forge interface {
	SetStatus(ctx context.Context, repo gitforge.Repo, sha string, st gitforge.Status) error
	PullByMergeCommit(ctx context.Context, repo gitforge.Repo, sha string) (*gitforge.Pull, error)
	Comment(ctx context.Context, repo gitforge.Repo, number int64, body string) error
}

// StatusContext is the commit status context pinbot sets for app.
func StatusContext(app string) string { return "pinbot/" + app }

// Reporter posts commit statuses and pull-request comments for apps whose
// repository lives on the forge.
type Reporter struct {
	forge    Forge
	forgeURL string
	merged   *lru.Cache // merge commit SHA -> *gitforge.Pull, from pull_request webhooks
}

// New reports through forge, the Gitea at forgeURL.
func New(forge Forge, forgeURL string) *Reporter {
	return &Reporter{forge: forge, forgeURL: forgeURL, merged: lru.New(maxMerged)}
}

// Forge is the forge r reports through (nil when r is).
func (r *Reporter) Forge() Forge {
	if r == nil {
		return nil
	}
	return r.forge
}

// Remember keeps pr, a pinbot pull request a webhook said was merged, so
// that the proof comment for its merge commit needs no search.
func (r *Reporter) Remember(pr *gitforge.Pull) {
	if r == nil || r.merged == nil || pr == nil || pr.MergeCommit == "" || pr.Number == 0 {
		return
	}
	r.merged.Add(pr.MergeCommit, pr)
}

// pullFor is the pull request sha merged: the remembered one, or the
// forge's answer.
func (r *Reporter) pullFor(ctx context.Context, repo gitforge.Repo, sha string) (*gitforge.Pull, error) {
	if r.merged != nil {
		if v, ok := r.merged.Get(sha); ok {
			return v.(*gitforge.Pull), nil
		}
	}
	return r.forge.PullByMergeCommit(ctx, repo, sha)
}

// RepoOf finds the repository at repoURL on the forge (see
// gitforge.RepoOf).
func (r *Reporter) RepoOf(repoURL string) (gitforge.Repo, bool) {
	if r == nil || r.forge == nil {
		return gitforge.Repo{}, false
	}
	repo, err := gitforge.RepoOf(r.forgeURL, repoURL)
	return repo, err == nil
}

// Status sets pinbot/<app> on sha in the repository at repoURL. A
// repository outside the forge is skipped.
func (r *Reporter) Status(ctx context.Context, app, repoURL, sha string, state commitstatus.State, desc string) error {
	repo, ok := r.RepoOf(repoURL)
	if !ok || sha == "" {
		return nil
	}
	desc = redact.String(desc)
	return r.forge.SetStatus(ctx, repo, sha, gitforge.Status{Context: StatusContext(app), State: state, Description: desc})
}

// Comment posts v on the pinbot promotion pull request that sha merged
// in the repository at repoURL, if there is one. It reports whether it
// commented.
func (r *Reporter) Comment(ctx context.Context, repoURL, sha string, v *verdict.Verification) (bool, error) {
	repo, ok := r.RepoOf(repoURL)
	if !ok || sha == "" {
		return false, nil
	}
	pr, err := r.pullFor(ctx, repo, sha)
	if err != nil || pr == nil || !IsPinbotPull(pr) {
		return false, err
	}
	if err := r.forge.Comment(ctx, repo, pr.Number, CommentBody(v)); err != nil {
		return false, err
	}
	return true, nil
}

// IsPinbotPull reports whether p is a pinbot promotion pull request: its
// head branch starts with "pinbot/" or its body carries pinbot's hidden
// marker.
func IsPinbotPull(p *gitforge.Pull) bool {
	return strings.HasPrefix(p.Head, "pinbot/") || strings.Contains(p.Body, "<!-- pinbot:")
}

// maxMerged bounds the merged pull requests remembered for the proof
// comment.
const maxMerged = 256

// maxCommentRows bounds the per-container table of a comment.
const maxCommentRows = 50

// CommentBody renders a verification as a pull-request comment: a verdict
// line and a table of the current Pods' containers.
func CommentBody(v *verdict.Verification) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- pinbot:verification app=%s commit=%s -->\n", v.App, v.Commit)
	if v.Verified {
		fmt.Fprintf(&b, "**pinbot verified `%s`** at %s: %s.\n\n", v.App, commitid.Short(v.Commit), v.Summary())
	} else {
		fmt.Fprintf(&b, "**pinbot could not verify `%s`** at %s: %s.\n\n", v.App, commitid.Short(v.Commit), v.Summary())
	}
	if len(v.Containers) > 0 {
		b.WriteString("| Pod | Container | Git digest | Running digest | Verdict |\n|---|---|---|---|---|\n")
		for i, c := range v.Containers {
			if i == maxCommentRows {
				fmt.Fprintf(&b, "\n…and %d more containers.\n", len(v.Containers)-maxCommentRows)
				break
			}
			fmt.Fprintf(&b, "| %s/%s | %s | `%s` | `%s` | %s |\n", c.Namespace, c.Pod, c.Container, imageref.Abbrev(c.GitDigest), imageref.Abbrev(c.RunningDigest), c.Verdict)
		}
	}
	if n := len(v.OldRevisions); n > 0 {
		fmt.Fprintf(&b, "\n%d containers of older revisions were still present and are not counted.\n", n)
	}
	return b.String()
}
