package gitforge

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	sdk "code.gitea.io/sdk/gitea"
)

// Protection is what Gitea's branch protection requires of pull requests
// into a branch, as far as a required status check goes.
type Protection struct {
	// Rule is the name of the rule that covers the branch (the branch, or
	// a glob); "" when none does.
	Rule string `json:"rule,omitempty"`
	// Checks are the required status checks, when the rule enables them.
	Checks []string `json:"checks,omitempty"`
	// AdminOverride: repository admins may merge past a failing check.
	AdminOverride bool `json:"adminOverride"`
	// MergeAllowList names the users and teams ("team:NAME") the rule
	// lets merge; empty when the rule lets every writer merge.
	MergeAllowList []string `json:"mergeAllowList,omitempty"`
}

// QueueLabel asks pinbot to merge a pull request, at the head whose
// pinbot/gate it passed (serve's merge queue): with the merge allow-list
// holding pinbot's account and the admins alone, how anyone else's does.
const QueueLabel = "pinbot/merge"

// Requires reports whether the protection requires the status check.
func (p Protection) Requires(check string) bool { return slices.Contains(p.Checks, check) }

// Protection returns the branch protection of branch in repo.
func (g *Gitea) Protection(ctx context.Context, repo Repo, branch string) (Protection, error) {
	bp, err := g.protectionRule(ctx, repo, branch)
	if err != nil || bp == nil {
		return Protection{}, err
	}
	out := Protection{Rule: ruleName(bp), AdminOverride: !bp.BlockAdminMergeOverride}
	if bp.EnableStatusCheck {
		out.Checks = bp.StatusCheckContexts
	}
	if bp.EnableMergeWhitelist {
		out.MergeAllowList = append(out.MergeAllowList, bp.MergeWhitelistUsernames...)
		for _, team := range bp.MergeWhitelistTeams {
			out.MergeAllowList = append(out.MergeAllowList, "team:"+team)
		}
	}
	return out, nil
}

// Binding is whether a branch's protection makes a status check binding
// on the pull requests into it.
type Binding struct {
	Branch     string     `json:"branch"`
	Protection Protection `json:"protection"`
	Binding    bool       `json:"binding"`
	// Applied: Bind made the check required.
	Applied bool `json:"applied"`
	// MergersApplied: Bind set the merge allow-list.
	MergersApplied bool `json:"mergersApplied,omitempty"`
}

// Bind reads the protection of branch (default: the repository's default
// branch) and whether it requires check; with apply, a check it does not
// require is made required first (RequireCheck), and when mergers are
// named, a merge allow-list other than them is set to them (AllowMerges)
// and the label QueueLabel made, for people to pick.
func (g *Gitea) Bind(ctx context.Context, repo Repo, branch, check string, apply bool, mergers []string) (Binding, error) {
	b := Binding{Branch: branch}
	var err error
	if b.Branch == "" {
		if b.Branch, err = g.DefaultBranch(ctx, repo); err != nil {
			return b, err
		}
	}
	if b.Protection, err = g.Protection(ctx, repo, b.Branch); err != nil {
		return b, err
	}
	if !b.Protection.Requires(check) && apply {
		if err := g.RequireCheck(ctx, repo, b.Branch, check); err != nil {
			return b, fmt.Errorf("%w (a repository admin's token may set branch protection)", err)
		}
		if b.Protection, err = g.Protection(ctx, repo, b.Branch); err != nil {
			return b, err
		}
		b.Applied = true
	}
	if apply && len(mergers) > 0 {
		if _, err := g.labelIDs(ctx, repo, []string{QueueLabel}); err != nil { // for people to pick
			return b, err
		}
	}
	if apply && len(mergers) > 0 && !sameSet(b.Protection.MergeAllowList, mergers) {
		if err := g.AllowMerges(ctx, repo, b.Branch, mergers); err != nil {
			return b, fmt.Errorf("%w (a repository admin's token may set branch protection)", err)
		}
		if b.Protection, err = g.Protection(ctx, repo, b.Branch); err != nil {
			return b, err
		}
		b.MergersApplied = true
	}
	b.Binding = b.Protection.Requires(check)
	return b, nil
}

// AllowMerges keeps merges into branch to mergers, users and teams
// ("team:NAME"): the rule that covers the branch gets that merge
// allow-list, or a new rule for the branch is made. It needs a token of a
// repository admin.
func (g *Gitea) AllowMerges(ctx context.Context, repo Repo, branch string, mergers []string) error {
	bp, err := g.protectionRule(ctx, repo, branch)
	if err != nil {
		return err
	}
	var users, teams []string
	for _, m := range mergers {
		if team, ok := strings.CutPrefix(m, "team:"); ok {
			teams = append(teams, team)
		} else {
			users = append(users, m)
		}
	}
	op := fmt.Sprintf("keeping merges into %s of %s to %s", branch, repo, strings.Join(mergers, ", "))
	return g.call(ctx, op, func(c *sdk.Client) (*sdk.Response, error) {
		if bp == nil {
			_, resp, err := c.CreateBranchProtection(repo.Owner, repo.Name, sdk.CreateBranchProtectionOption{
				RuleName: branch, EnableMergeWhitelist: true, MergeWhitelistUsernames: users, MergeWhitelistTeams: teams,
			})
			return resp, err
		}
		on := true
		_, resp, err := c.EditBranchProtection(repo.Owner, repo.Name, ruleName(bp), sdk.EditBranchProtectionOption{
			EnableMergeWhitelist: &on, MergeWhitelistUsernames: users, MergeWhitelistTeams: teams,
		})
		return resp, err
	})
}

// sameSet reports whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	return len(a) == len(b) && !slices.ContainsFunc(a, func(s string) bool { return !slices.Contains(b, s) })
}

// RequireCheck makes the status check required on pull requests into
// branch: the rule that covers the branch gets it, or a new rule for the
// branch is made. It needs a token of a repository admin.
func (g *Gitea) RequireCheck(ctx context.Context, repo Repo, branch, check string) error {
	bp, err := g.protectionRule(ctx, repo, branch)
	if err != nil {
		return err
	}
	op := fmt.Sprintf("requiring the status check %q on %s of %s", check, branch, repo)
	return g.call(ctx, op, func(c *sdk.Client) (*sdk.Response, error) {
		if bp == nil {
			_, resp, err := c.CreateBranchProtection(repo.Owner, repo.Name, sdk.CreateBranchProtectionOption{
				RuleName: branch, EnableStatusCheck: true, StatusCheckContexts: []string{check},
			})
			return resp, err
		}
		contexts := bp.StatusCheckContexts
		if !bp.EnableStatusCheck {
			contexts = nil
		}
		if !slices.Contains(contexts, check) {
			contexts = append(contexts, check)
		}
		on := true
		_, resp, err := c.EditBranchProtection(repo.Owner, repo.Name, ruleName(bp), sdk.EditBranchProtectionOption{
			EnableStatusCheck: &on, StatusCheckContexts: contexts,
		})
		return resp, err
	})
}

// protectionRule is the rule covering branch: one named for it, else the
// first whose glob matches it; nil for none.
func (g *Gitea) protectionRule(ctx context.Context, repo Repo, branch string) (*sdk.BranchProtection, error) {
	var rules []*sdk.BranchProtection
	err := g.call(ctx, "reading the branch protection of "+repo.String(), func(c *sdk.Client) (*sdk.Response, error) {
		return pages(func(opt sdk.ListOptions) (*sdk.Response, error) {
			page, resp, err := c.ListBranchProtections(repo.Owner, repo.Name, sdk.ListBranchProtectionsOptions{ListOptions: opt})
			rules = append(rules, page...)
			return resp, err
		})
	})
	if err != nil {
		return nil, err
	}
	for _, bp := range rules {
		if ruleName(bp) == branch {
			return bp, nil
		}
	}
	for _, bp := range rules {
		if ok, _ := path.Match(ruleName(bp), branch); ok {
			return bp, nil
		}
	}
	return nil, nil
}

func ruleName(bp *sdk.BranchProtection) string {
	if bp.RuleName != "" {
		return bp.RuleName
	}
	return bp.BranchName
}
