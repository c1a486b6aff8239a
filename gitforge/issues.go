package gitforge

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"unicode/utf8"

	sdk "code.gitea.io/sdk/gitea"

	"pinbot.dev/pinbot/internal/commitstatus"
)

// Status is a commit status, as CI systems and pinbot's reconciler report
// them next to a commit.
type Status struct {
	// Context names the check, e.g. "pinbot/staging".
	Context     string
	State       commitstatus.State
	Description string
	TargetURL   string
	// Creator is the login of the account that posted it (read only:
	// Statuses fills it in, SetStatus posts as the token's account).
	Creator string
}

// labelColors are the colours of labels AddLabels creates, picked by name
// so a label gets the same colour on every repository.
var labelColors = []string{"#0e8a16", "#1d76db", "#5319e7", "#fbca04", "#d93f0b", "#006b75", "#b60205", "#c5def5"}

func labelColor(name string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return labelColors[h.Sum32()%uint32(len(labelColors))]
}

// AddLabels adds the named labels to pull request (or issue) number,
// creating the ones repo does not have yet (organisation labels count as
// existing). Labels already on it stay.
func (g *Gitea) AddLabels(ctx context.Context, repo Repo, number int64, names []string) error {
	if len(names) == 0 {
		return nil
	}
	ids, err := g.labelIDs(ctx, repo, names)
	if err != nil {
		return err
	}
	return g.call(ctx, fmt.Sprintf("labelling %s#%d", repo, number), func(c *sdk.Client) (*sdk.Response, error) {
		_, resp, err := c.AddIssueLabels(repo.Owner, repo.Name, number, sdk.IssueLabelsOption{Labels: ids})
		return resp, err
	})
}

// labelIDs resolves label names to IDs, creating missing repository labels.
func (g *Gitea) labelIDs(ctx context.Context, repo Repo, names []string) ([]int64, error) {
	byName := map[string]int64{}
	err := g.call(ctx, "listing labels of "+repo.String(), func(c *sdk.Client) (*sdk.Response, error) {
		return pages(func(opt sdk.ListOptions) (*sdk.Response, error) {
			labels, resp, err := c.ListRepoLabels(repo.Owner, repo.Name, sdk.ListLabelsOptions{ListOptions: opt})
			for _, l := range labels {
				byName[l.Name] = l.ID
			}
			return resp, err
		})
	})
	if err != nil {
		return nil, err
	}
	if missing(byName, names) {
		err := g.call(ctx, "listing labels of organisation "+repo.Owner, func(c *sdk.Client) (*sdk.Response, error) {
			return pages(func(opt sdk.ListOptions) (*sdk.Response, error) {
				labels, resp, err := c.ListOrgLabels(repo.Owner, sdk.ListOrgLabelsOptions{ListOptions: opt})
				for _, l := range labels {
					if _, ok := byName[l.Name]; !ok {
						byName[l.Name] = l.ID
					}
				}
				return resp, err
			})
		})
		if err != nil && !errors.Is(err, ErrNotFound) { // 404: the owner is a user
			return nil, err
		}
	}
	ids := make([]int64, 0, len(names))
	for _, name := range names {
		id, ok := byName[name]
		if !ok {
			err := g.call(ctx, fmt.Sprintf("creating label %q in %s", name, repo), func(c *sdk.Client) (*sdk.Response, error) {
				l, resp, err := c.CreateLabel(repo.Owner, repo.Name, sdk.CreateLabelOption{Name: name, Color: labelColor(name)})
				if err == nil {
					id = l.ID
				}
				return resp, err
			})
			if err != nil {
				return nil, err
			}
			byName[name] = id
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func missing(have map[string]int64, names []string) bool {
	for _, n := range names {
		if _, ok := have[n]; !ok {
			return true
		}
	}
	return false
}

// RequestReviewers asks the named users to review pull request number.
// Gitea refuses to request a review from the pull request's author.
func (g *Gitea) RequestReviewers(ctx context.Context, repo Repo, number int64, reviewers []string) error {
	if len(reviewers) == 0 {
		return nil
	}
	return g.call(ctx, fmt.Sprintf("requesting reviewers %v on %s#%d", reviewers, repo, number), func(c *sdk.Client) (*sdk.Response, error) {
		return c.CreateReviewRequests(repo.Owner, repo.Name, number, sdk.PullReviewRequestOptions{Reviewers: reviewers})
	})
}

// Comment posts body as a comment on pull request (or issue) number.
func (g *Gitea) Comment(ctx context.Context, repo Repo, number int64, body string) error {
	return g.call(ctx, fmt.Sprintf("commenting on %s#%d", repo, number), func(c *sdk.Client) (*sdk.Response, error) {
		_, resp, err := c.CreateIssueComment(repo.Owner, repo.Name, number, sdk.CreateIssueCommentOption{Body: body})
		return resp, err
	})
}

// Comments returns the bodies of the comments on pull request (or issue)
// number, oldest first.
func (g *Gitea) Comments(ctx context.Context, repo Repo, number int64) ([]string, error) {
	var bodies []string
	err := g.call(ctx, fmt.Sprintf("listing comments of %s#%d", repo, number), func(c *sdk.Client) (*sdk.Response, error) {
		return pages(func(opt sdk.ListOptions) (*sdk.Response, error) {
			comments, resp, err := c.ListIssueComments(repo.Owner, repo.Name, number, sdk.ListIssueCommentOptions{ListOptions: opt})
			for _, cm := range comments {
				bodies = append(bodies, cm.Body)
			}
			return resp, err
		})
	})
	return bodies, err
}

// SetStatus sets the commit status st.Context of commit sha.
func (g *Gitea) SetStatus(ctx context.Context, repo Repo, sha string, st Status) error {
	switch st.State {
	case commitstatus.Pending, commitstatus.Success, commitstatus.Failure, commitstatus.Error:
	default:
		return fmt.Errorf("setting status %q on %s@%s: unknown state %q (want pending, success, failure or error)", st.Context, repo, sha, st.State)
	}
	return g.call(ctx, fmt.Sprintf("setting status %q on %s@%s", st.Context, repo, sha), func(c *sdk.Client) (*sdk.Response, error) {
		_, resp, err := c.CreateStatus(repo.Owner, repo.Name, sha, sdk.CreateStatusOption{
			State: sdk.StatusState(st.State), Context: st.Context, Description: ClipDescription(st.Description), TargetURL: st.TargetURL,
		})
		return resp, err
	})
}

// MaxDescription bounds a commit status description, in bytes: Gitea
// keeps 255 characters.
const MaxDescription = 250

// ClipDescription is desc cut to MaxDescription bytes at a word boundary
// (never inside a word or a UTF-8 character), with "…" saying it was
// cut; SetStatus clips every description so.
func ClipDescription(desc string) string {
	if len(desc) <= MaxDescription {
		return desc
	}
	cut := desc[:MaxDescription-len("…")]
	for !utf8.ValidString(cut) {
		cut = cut[:len(cut)-1]
	}
	if i := strings.LastIndexAny(cut, " ,;:"); i > len(cut)/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:") + "…"
}

// Statuses returns the current status of each context on ref (a commit
// SHA, branch or tag): the newest per context, sorted by context.
func (g *Gitea) Statuses(ctx context.Context, repo Repo, ref string) ([]Status, error) {
	var out []Status
	err := g.call(ctx, fmt.Sprintf("reading statuses of %s@%s", repo, ref), func(c *sdk.Client) (*sdk.Response, error) {
		cs, resp, err := c.GetCombinedStatus(repo.Owner, repo.Name, ref)
		if err != nil {
			return resp, err
		}
		for _, s := range cs.Statuses {
			st := Status{Context: s.Context, State: commitstatus.State(s.State), Description: s.Description, TargetURL: s.TargetURL}
			if s.Creator != nil {
				st.Creator = s.Creator.UserName
			}
			out = append(out, st)
		}
		return resp, nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Context < out[j].Context })
	return out, err
}
