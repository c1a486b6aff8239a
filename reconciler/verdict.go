package reconciler

import "pinbot.dev/pinbot/reconciler/verdict"

// The verdict core lives in reconciler/verdict; these names keep the
// reconciler's API as it was.
type (
	// Snapshot is verdict.Snapshot: what one verification reads.
	Snapshot = verdict.Snapshot
	// Verification is verdict.Verification: per-container verdicts.
	Verification = verdict.Verification
	// ContainerVerdict is verdict.ContainerVerdict.
	ContainerVerdict = verdict.ContainerVerdict
	// Verdict is verdict.Verdict.
	Verdict = verdict.Verdict
	// Health is verdict.Health, an app's or an object's health.
	Health = verdict.Health
	// HealthReport is verdict.HealthReport.
	HealthReport = verdict.HealthReport
	// ObjectHealth is verdict.ObjectHealth.
	ObjectHealth = verdict.ObjectHealth
	// Lookup is verdict.Lookup, a registry question.
	Lookup = verdict.Lookup
	// LookupKind is verdict.LookupKind.
	LookupKind = verdict.LookupKind
	// Answer is verdict.Answer, the registry's reply to a Lookup.
	Answer = verdict.Answer
	// Lookups is verdict.Lookups, answers by question.
	Lookups = verdict.Lookups
)

// Verdicts (see verdict.Verdict).
const (
	Verified = verdict.Verified
	Mismatch = verdict.Mismatch
	Pending  = verdict.Pending
	Unknown  = verdict.Unknown
)

// Health values (see verdict.Health).
const (
	Healthy       = verdict.Healthy
	Progressing   = verdict.Progressing
	Missing       = verdict.Missing
	Degraded      = verdict.Degraded
	HealthUnknown = verdict.HealthUnknown
)

// Lookup kinds (see verdict.LookupKind).
const (
	LookupChild  = verdict.LookupChild
	LookupConfig = verdict.LookupConfig
)

// Verify is verdict.Verify: the verification of s's workloads.
func Verify(app, commit string, s *Snapshot) *Verification { return verdict.Verify(app, commit, s) }

// Needs is verdict.Needs: the registry lookups Verify of s would use.
func Needs(s *Snapshot) []Lookup { return verdict.Needs(s) }

// AssessHealth is verdict.AssessHealth: the health of s's desired objects.
func AssessHealth(s *Snapshot) HealthReport { return verdict.AssessHealth(s) }

// shortDigest is verdict.ShortDigest.
func shortDigest(d string) string { return verdict.ShortDigest(d) }
