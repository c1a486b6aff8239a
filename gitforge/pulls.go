package gitforge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	sdk "code.gitea.io/sdk/gitea"
)

// Pull is a pull request.
type Pull struct {
	Number int64
	// URL is the pull request's web page.
	URL   string
	Title string
	Body  string
	// Head and Base are branch names in the repository.
	Head, Base string
	// HeadSHA is the commit at the head of the pull request.
	HeadSHA string
	// State is "open" or "closed" (a merged pull request is closed).
	State  string
	Merged bool
	// MergeCommit is the SHA of the merge commit, once merged; MergedBy
	// and MergedAt say who merged it, and when.
	MergeCommit string
	MergedBy    string
	MergedAt    time.Time
	// Labels and Reviewers (requested ones) are names.
	Labels    []string
	Reviewers []string
	// Author is the login of the account that opened it.
	Author string
}

// Pull request states for ListPulls.
const (
	StateOpen   = "open"
	StateClosed = "closed"
	StateAll    = "all"
)

func toPull(pr *sdk.PullRequest) Pull {
	p := Pull{
		Number: pr.Index,
		URL:    pr.HTMLURL,
		Title:  pr.Title,
		Body:   pr.Body,
		State:  string(pr.State),
		Merged: pr.HasMerged,
	}
	if pr.Head != nil {
		p.Head, p.HeadSHA = pr.Head.Ref, pr.Head.Sha
	}
	if pr.Base != nil {
		p.Base = pr.Base.Ref
	}
	if pr.MergedCommitID != nil {
		p.MergeCommit = *pr.MergedCommitID
	}
	if pr.MergedBy != nil {
		p.MergedBy = pr.MergedBy.UserName
	}
	if pr.Merged != nil {
		p.MergedAt = *pr.Merged
	}
	if pr.Poster != nil {
		p.Author = pr.Poster.UserName
	}
	for _, l := range pr.Labels {
		p.Labels = append(p.Labels, l.Name)
	}
	for _, u := range pr.RequestedReviewers {
		p.Reviewers = append(p.Reviewers, u.UserName)
	}
	return p
}

// sameRepo reports whether pr's head branch lives in the base repository
// (not a fork that happens to use the same branch name).
func sameRepo(pr *sdk.PullRequest) bool {
	if pr.Head == nil || pr.Base == nil {
		return false
	}
	return pr.Head.RepoID == 0 || pr.Head.RepoID == pr.Base.RepoID
}

// ListPulls returns the pull requests of repo in state (StateOpen,
// StateClosed or StateAll; "" means StateOpen), lowest number first.
func (g *Gitea) ListPulls(ctx context.Context, repo Repo, state string) ([]Pull, error) {
	if state == "" {
		state = StateOpen
	}
	switch state {
	case StateOpen, StateClosed, StateAll:
	default:
		return nil, fmt.Errorf("listing pull requests of %s: unknown state %q (want open, closed or all)", repo, state)
	}
	prs, err := g.listPulls(ctx, repo, state)
	if err != nil {
		return nil, err
	}
	out := make([]Pull, 0, len(prs))
	for _, pr := range prs {
		out = append(out, toPull(pr))
	}
	return out, nil
}

func (g *Gitea) listPulls(ctx context.Context, repo Repo, state string) ([]*sdk.PullRequest, error) {
	var all []*sdk.PullRequest
	err := g.call(ctx, "listing pull requests of "+repo.String(), func(c *sdk.Client) (*sdk.Response, error) {
		return pages(func(opt sdk.ListOptions) (*sdk.Response, error) {
			prs, resp, err := c.ListRepoPullRequests(repo.Owner, repo.Name, sdk.ListPullRequestsOptions{
				ListOptions: opt, State: sdk.StateType(state),
			})
			all = append(all, prs...)
			return resp, err
		})
	})
	sort.Slice(all, func(i, j int) bool { return all[i].Index < all[j].Index })
	return all, err
}

// OpenPull returns the open pull request from branch head of repo (into
// any base), or nil when there is none. With several, the oldest wins.
func (g *Gitea) OpenPull(ctx context.Context, repo Repo, head string) (*Pull, error) {
	prs, err := g.listPulls(ctx, repo, StateOpen)
	if err != nil {
		return nil, err
	}
	for _, pr := range prs {
		if pr.Head != nil && pr.Head.Ref == head && sameRepo(pr) {
			p := toPull(pr)
			return &p, nil
		}
	}
	return nil, nil
}

// CreatePull opens a pull request in repo from p.Head into p.Base with
// p.Title and p.Body; the other fields of p are ignored.
func (g *Gitea) CreatePull(ctx context.Context, repo Repo, p Pull) (*Pull, error) {
	if p.Head == "" || p.Base == "" || p.Title == "" {
		return nil, fmt.Errorf("creating pull request in %s: head, base and title are required", repo)
	}
	op := fmt.Sprintf("creating pull request %s -> %s in %s", p.Head, p.Base, repo)
	return g.pullCall(ctx, op, func(c *sdk.Client) (*sdk.PullRequest, *sdk.Response, error) {
		return c.CreatePullRequest(repo.Owner, repo.Name, sdk.CreatePullRequestOption{
			Head: p.Head, Base: p.Base, Title: p.Title, Body: p.Body,
		})
	})
}

// EditPull sets the title and body of pull request number.
func (g *Gitea) EditPull(ctx context.Context, repo Repo, number int64, title, body string) (*Pull, error) {
	return g.pullCall(ctx, fmt.Sprintf("editing pull request %s#%d", repo, number), func(c *sdk.Client) (*sdk.PullRequest, *sdk.Response, error) {
		return c.EditPullRequest(repo.Owner, repo.Name, number, sdk.EditPullRequestOption{Title: title, Body: &body})
	})
}

// GetPull returns pull request number.
func (g *Gitea) GetPull(ctx context.Context, repo Repo, number int64) (*Pull, error) {
	return g.pullCall(ctx, fmt.Sprintf("reading pull request %s#%d", repo, number), func(c *sdk.Client) (*sdk.PullRequest, *sdk.Response, error) {
		return c.GetPullRequest(repo.Owner, repo.Name, number)
	})
}

// pullCall runs one SDK call that answers with a pull request, as g.call
// does, and converts the answer.
func (g *Gitea) pullCall(ctx context.Context, op string, f func(*sdk.Client) (*sdk.PullRequest, *sdk.Response, error)) (*Pull, error) {
	var out Pull
	err := g.call(ctx, op, func(c *sdk.Client) (*sdk.Response, error) {
		pr, resp, err := f(c)
		if err == nil {
			out = toPull(pr)
		}
		return resp, err
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ClosePull closes pull request number without merging it, after posting
// comment on it when comment is not empty (say why: "superseded by #12").
func (g *Gitea) ClosePull(ctx context.Context, repo Repo, number int64, comment string) error {
	if comment != "" {
		if err := g.Comment(ctx, repo, number, comment); err != nil {
			return err
		}
	}
	closed := sdk.StateClosed
	return g.call(ctx, fmt.Sprintf("closing pull request %s#%d", repo, number), func(c *sdk.Client) (*sdk.Response, error) {
		_, resp, err := c.EditPullRequest(repo.Owner, repo.Name, number, sdk.EditPullRequestOption{State: &closed})
		return resp, err
	})
}

// PullByMergeCommit returns the merged pull request whose merge commit is
// sha, or nil when no pull request was merged as sha.
func (g *Gitea) PullByMergeCommit(ctx context.Context, repo Repo, sha string) (*Pull, error) {
	var out Pull
	err := g.call(ctx, fmt.Sprintf("finding the pull request merged as %s in %s", sha, repo), func(c *sdk.Client) (*sdk.Response, error) {
		pr, resp, err := c.GetCommitPullRequest(repo.Owner, repo.Name, sha)
		if err == nil {
			out = toPull(pr)
		}
		return resp, err
	})
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ErrNotMergeable means Gitea refused to merge a pull request now: branch
// protection wants approvals or status checks it lacks, it conflicts, or
// Gitea is still checking it. Try again later.
var ErrNotMergeable = errors.New("not mergeable now")

// ErrHeadMoved means a pull request's head is no longer the commit the
// merge was asked for: someone pushed to its branch since.
var ErrHeadMoved = errors.New("its head moved")

// MergePull merges pull request number with a merge commit, as a reviewer
// pressing the button would: branch protection (required approvals and
// status checks) holds, and is never bypassed. Gitea merges only while the
// pull request's head is head, the commit the caller judged: one pushed
// since is ErrHeadMoved. It returns ErrNotMergeable when Gitea refuses.
func (g *Gitea) MergePull(ctx context.Context, repo Repo, number int64, head, message string) error {
	if head == "" {
		return fmt.Errorf("merging pull request %s#%d: no head commit to merge at", repo, number)
	}
	var merged, moved bool
	var why string
	err := g.call(ctx, fmt.Sprintf("merging pull request %s#%d at %s", repo, number, head), func(c *sdk.Client) (*sdk.Response, error) {
		ok, resp, err := c.MergePullRequest(repo.Owner, repo.Name, number, sdk.MergePullRequestOption{
			Style: sdk.MergeStyleMerge, Message: message, HeadCommitId: head,
		})
		switch {
		case resp != nil && resp.StatusCode == http.StatusMethodNotAllowed:
			return resp, nil // refused: below
		case resp != nil && resp.StatusCode == http.StatusConflict:
			// Gitea answers 409 for a head that moved and for conflicts
			// alike, and the SDK drops the message: the pull request's
			// head tells them apart.
			p, _, perr := c.GetPullRequest(repo.Owner, repo.Name, number)
			moved = perr == nil && p.Head != nil && p.Head.Sha != head
			why = ": it conflicts with its base"
			return resp, nil
		}
		merged = ok
		return resp, err
	})
	switch {
	case err != nil:
		return err
	case moved:
		return fmt.Errorf("merging pull request %s#%d at %s: %w", repo, number, head, ErrHeadMoved)
	case !merged:
		return fmt.Errorf("merging pull request %s#%d: %w%s", repo, number, ErrNotMergeable, why)
	}
	return nil
}
