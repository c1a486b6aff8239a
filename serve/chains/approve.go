package chains

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/commitid"
	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/release"
)

// maxApprovals bounds the approvals a ledger keeps, the newest.
const maxApprovals = 20

// ApproveChain records in l that who approved pull request pr at head, a
// full commit SHA, for why: its change of the chain's environments no
// longer fails the gate at that head (Judge), and its pins are judged as
// any head's are. A head pushed since is not approved. The approval is in
// the audit with who and why.
func ApproveChain(l *release.Ledger, pr int64, head, who, why string, now time.Time) error {
	if !fullSHA(head) {
		return fmt.Errorf("the head %q is not a full commit SHA: approve the head the gate names", head)
	}
	l.ChainApprovals = append(slices.DeleteFunc(l.ChainApprovals, func(a release.Approval) bool { return a.PR == pr }),
		release.Approval{PR: pr, Head: head, By: who, Why: why, At: now})
	if n := len(l.ChainApprovals); n > maxApprovals {
		l.ChainApprovals = slices.Delete(l.ChainApprovals, 0, n-maxApprovals)
	}
	l.LogBy(now, "", "", release.ReasonChainApproved, fmt.Sprintf("%s approved #%d at %s, which changes the release chain: %s", who, pr, commitid.Short(head), why), who, why)
	return nil
}

// Judge is release.JudgePull of pull request pr at its head sha, with the
// approvals of l: a head that changes the chain's environments fails,
// naming the command that approves it; approved at this head, it is judged
// pin by pin as any head is.
func Judge(l *release.Ledger, chain release.Chain, base map[string]map[string]string, head release.PullHead, pr int64, sha string, now time.Time, attested release.AttestationOf) (commitstatus.State, string) {
	approved := ""
	if head.ChainChange != "" {
		i := slices.IndexFunc(l.ChainApprovals, func(a release.Approval) bool { return a.PR == pr && a.Head == sha })
		if i < 0 {
			// The command first: Gitea clips a long description.
			return commitstatus.Failure, fmt.Sprintf("changes the release chain; one who may write the ledger approves this head with "+
				"pinbot chain approve %d --head %s --reason TEXT (it %s)", pr, sha, head.ChainChange)
		}
		a := l.ChainApprovals[i]
		head.ChainChange, approved = "", fmt.Sprintf("; its chain change approved by %s: %s", a.By, a.Why)
	}
	state, desc := release.JudgePull(l, chain, base, head, now, attested)
	return state, desc + approved
}

// fullSHA reports a whole commit ID: 40 (SHA-1) or 64 (SHA-256) lowercase
// hex digits. An approval is of one commit, never of a prefix.
func fullSHA(s string) bool {
	return (len(s) == 40 || len(s) == 64) && strings.Trim(s, "0123456789abcdef") == ""
}
