package reconciler_test

import (
	"testing"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler"
)

// Proof reads an app's proof once for every consumer: a fresh observe
// pass while no loop of the app runs in this process (another replica's
// app, or before the first pass), then the loop's last pass, which its
// watches keep current.
func TestProofSaysWhereItComesFrom(t *testing.T) {
	s := newScenario(t, "proofsource", "{automated: true}")
	img := pushImage(t, "proofsource-app", "v1")
	s.push(map[string]string{"app/deploy.yaml": deployment(1, img.ref())}, "Pin v1")
	st, _, src, err := s.r.Proof(testCtx, s.name)
	if err != nil || src != reconciler.ProofFresh || st.Commit == "" {
		t.Fatalf("Proof before any loop = %+v, %s, %v; want a fresh pass at the pushed commit", st, src, err)
	}
	s.run()
	poll.Until(t, rollout, "the loop's last pass proves v1", func() (bool, string) {
		st, v, src, err := s.r.Proof(testCtx, s.name)
		if err != nil {
			return false, err.Error()
		}
		return src == reconciler.ProofLast && st.Verified, string(src) + ": " + describe(st, v)
	})
}
