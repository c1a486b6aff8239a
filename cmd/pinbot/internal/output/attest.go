package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"pinbot.dev/pinbot/trust/attest"
)

// Attestation prints what the attestations of ref say: as JSON, or the
// passing one's facts, or why none passed.
func Attestation(w io.Writer, asJSON bool, ref string, a attest.Answer) error {
	if asJSON {
		return json.NewEncoder(w).Encode(a)
	}
	if !a.Passed {
		_, err := fmt.Fprintf(w, "%s: not proven\n  %s\n", ref, strings.Join(a.Why, "\n  "))
		return err
	}
	p := a.Predicate
	tag := ""
	if p.Tag != "" {
		tag = " (" + p.Tag + ")"
	}
	_, err := fmt.Fprintf(w, "%s%s: proven running in %s since %s, for %s (soak %s), on %s: %d Pods of %s\n  commit %s of %s; attested %s by pinbot %s; signed by %s\n",
		ref, tag, p.Environment, p.ProvenSince.UTC().Format(time.RFC3339), time.Duration(p.ProvenFor), time.Duration(p.Soak),
		strings.Join(p.Clusters, ", "), len(p.Pods), strings.Join(p.Apps, ", "),
		orDash(p.Commit), p.Repository, p.AttestedAt.UTC().Format(time.RFC3339), p.Pinbot, a.Signer)
	return err
}

// ForSoak is " for D", how long a digest must have stayed proven, or ""
// for no minimum.
func ForSoak(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return " for " + d.String()
}
