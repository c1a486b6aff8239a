package events

import (
	"strings"
	"testing"

	"pinbot.dev/pinbot/reconciler/verdict"
)

// Each state of a proof makes its Event: a Warning for what a person must
// look at, a Normal one for what is on its way or done.
func TestOf(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	with := func(v verdict.Verdict) *verdict.Verification {
		return &verdict.Verification{Commit: commit, Containers: []verdict.ContainerVerdict{{Namespace: "shop", Pod: "web-1", Container: "app", Verdict: v, Reason: "runs sha256:0ld"}}}
	}
	for _, tc := range []struct {
		v       *verdict.Verification
		reason  string
		warning bool
		message string
	}{
		{&verdict.Verification{Commit: commit, Verified: true}, "Verified", false, "every current Pod runs the digests commit 0123456789ab pins"},
		{with(verdict.Mismatch), "Mismatch", true, "commit 0123456789ab: "},
		{with(verdict.Inconclusive), "Inconclusive", true, "the registry could not prove"},
		{with(verdict.Unknown), "Unknown", true, "commit 0123456789ab: "},
		{with(verdict.Pending), "Pending", false, "commit 0123456789ab: "},
	} {
		reason, warning, message := Of(tc.v)
		if reason != tc.reason || warning != tc.warning || !strings.HasPrefix(message, tc.message) {
			t.Errorf("%s: %s, warning %v, %q; want %s, %v, %q…", tc.reason, reason, warning, message, tc.reason, tc.warning, tc.message)
		}
	}
}
