package release

import "time"

// Approval is a person's approval of pull request PR at its head Head
// (Ledger.ChainApprovals): a head pushed since is not approved.
type Approval struct {
	PR   int64     `json:"pr"`
	Head string    `json:"head"`
	By   string    `json:"by"`
	Why  string    `json:"why"`
	At   time.Time `json:"at"`
}
