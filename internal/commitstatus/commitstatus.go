// Package commitstatus is the vocabulary of a forge's commit statuses: the
// states pinbot posts for an app's proof (pinbot/<app>) and for the release
// gate (pinbot/gate). It imports nothing, so every package, pure or not,
// speaks it.
package commitstatus

// State is a commit status's state, as Gitea's API spells it.
type State string

// States.
const (
	Pending State = "pending"
	Success State = "success"
	Failure State = "failure"
	Error   State = "error"
)
