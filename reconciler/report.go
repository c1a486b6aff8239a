package reconciler

import (
	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/reconciler/report"
)

// Merged tells the Reconciler that pr, a pinbot promotion pull request,
// was merged (a pull_request webhook said so), so that the proof comment
// for its merge commit needs no search.
func (r *Reconciler) Merged(pr *gitforge.Pull) {
	if report.IsPinbotPull(pr) {
		r.report.Remember(pr)
	}
}
