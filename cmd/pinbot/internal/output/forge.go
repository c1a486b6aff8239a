package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/release"
)

// Protection says whether b's protection makes the gate binding on its
// branch.
func Protection(w io.Writer, asJSON bool, repo gitforge.Repo, b gitforge.Binding) error {
	if asJSON {
		return json.NewEncoder(w).Encode(b)
	}
	branch, p, applied := b.Branch, b.Protection, b.Applied
	var err error
	switch {
	case p.Requires(release.PullContext) && applied:
		_, err = fmt.Fprintf(w, "%s of %s: made %s a required status check (rule %s)\n", branch, repo, release.PullContext, p.Rule)
	case p.Requires(release.PullContext):
		_, err = fmt.Fprintf(w, "%s of %s: %s is a required status check (rule %s)\n", branch, repo, release.PullContext, p.Rule)
	case p.Rule == "":
		_, err = fmt.Fprintf(w, "%s of %s: no branch protection rule covers it\n", branch, repo)
	default:
		_, err = fmt.Fprintf(w, "%s of %s: rule %s does not require %s\n", branch, repo, p.Rule, release.PullContext)
	}
	if err == nil && b.MergersApplied {
		_, err = fmt.Fprintf(w, "%s of %s: set the merge allow-list to %s\n", branch, repo, strings.Join(p.MergeAllowList, ", "))
	}
	if err == nil && p.Requires(release.PullContext) && p.AdminOverride {
		_, err = fmt.Fprintf(w, "note: repository admins may merge past a failing check (a forced release needs one)\n")
	}
	if err == nil && p.Requires(release.PullContext) {
		// A required status is one any writer can post: say what holds.
		who := "every writer of the repository may merge"
		if len(p.MergeAllowList) > 0 {
			who = "only " + strings.Join(p.MergeAllowList, ", ") + " may merge (the rule's merge allow-list; others label a pull request " +
				gitforge.QueueLabel + " and pinbot merges it at the head it passed, when its account is on the list)"
		}
		_, err = fmt.Fprintf(w, "not binding on its own: any writer can post %s herself; %s. pinbot marks a merge whose head lacked its own passing %s as a gate bypass: no hold lifted, no attestation (docs/security.md)\n",
			release.PullContext, who, release.PullContext)
	}
	return err
}
