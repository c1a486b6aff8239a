package attester

import (
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/release"
)

// TestAttestationSaysWhoBroughtTheDigest: the proven-running predicate's
// by names the people whose actions brought the digest in, as the
// ledger's audit has them: olga's force of it into prod, the rollback vic
// asked for in staging; not a pause, nor an action in another
// environment or of another digest.
func TestAttestationSaysWhoBroughtTheDigest(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	const img = "r.example/web"
	forced, back, other := "sha256:"+strings.Repeat("f", 64), "sha256:"+strings.Repeat("b", 64), "sha256:"+strings.Repeat("0", 64)
	l := release.New()
	l.LogBy(now, "prod", img, release.ReasonPromotionOpened, "olga forced sha256:ffffffffffff into prod past the gate: CVE-2026-0001 (#9)", "olga", "CVE-2026-0001")
	l.LogBy(now, "prod", img, release.ReasonPromotionOpened, "olga forced sha256:000000000000 into prod past the gate: an older try (#8)", "olga", "an older try")
	l.PauseBy("prod", "vic", "incident 42", now)
	l.LogBy(now.Add(time.Minute), "staging", img, release.ReasonRollbackAsked, "vic asked to roll r.example/web back from sha256:000000000000: errors", "vic", "errors")
	l.LogBy(now.Add(time.Hour), "staging", img, release.ReasonRollbackAsked, "vic asked again, after the merge", "vic", "later")

	prod := &release.Track{Proven: forced, Merged: &release.Merge{Digest: forced, At: now.Add(2 * time.Minute)}}
	if by := ActsFor(l, "prod", img, prod); len(by) != 1 || by[0].Who != "olga" || by[0].Why != "CVE-2026-0001" || !strings.Contains(by[0].What, "#9") {
		t.Errorf("prod's by = %+v; want olga's force of the digest alone", by)
	}
	staging := &release.Track{Proven: back, Merged: &release.Merge{Digest: back, At: now.Add(5 * time.Minute), Rollback: true}}
	if by := ActsFor(l, "staging", img, staging); len(by) != 1 || by[0].Who != "vic" || by[0].Why != "errors" {
		t.Errorf("staging's by = %+v; want vic's ask that opened the rollback", by)
	}
	if by := ActsFor(l, "staging", img, &release.Track{Proven: other, Merged: &release.Merge{Digest: other, At: now}}); len(by) != 0 {
		t.Errorf("a digest the chain moved alone: by = %+v; want none", by)
	}
}
