package e2e_test

import (
	"strings"
	"testing"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// TestFluxDeploysWhatPinbotProves: a plain Kustomization. Each merge in
// Gitea reaches Verified through the real source-controller and
// kustomize-controller, pinbot applying nothing; a merge the controller has
// not applied (the Kustomization suspended) is pending, not failed; a node
// that kept the old image is a mismatch.
func TestFluxDeploysWhatPinbotProves(t *testing.T) {
	repo, v1 := pushImage(t, "fx-plain", "v1")
	_, v2 := pushImage(t, "fx-plain", "v2")
	_, v3 := pushImage(t, "fx-plain", "v3")
	a, first := newFluxApp(t, "fx-plain", map[string]string{"deploy/web.yaml": deployment(2, repo+":v1@"+v1)}, "deploy", "")

	a.waitApplied(first)
	st, v := a.waitStatus("verified at the first commit", func(st *status.App, v *verdict.Verification) bool {
		return st.Commit == first && v != nil && v.Verified
	})
	if st.Source != "flux" || st.DeployedCommit != first || st.Sync != status.Synced || st.Health != verdict.Healthy {
		t.Errorf("status at the first commit: %s", describe(st, v))
	}
	for _, c := range v.Containers {
		if c.RunningDigest != v1 {
			t.Errorf("container %s/%s runs %s, want %s", c.Pod, c.Container, c.RunningDigest, v1)
		}
	}
	a.waitCommitStatus(first, "success on the first commit", func(s *gitforge.Status) bool { return s.State == "success" })

	// A merge the controller does not apply: pinbot says it waits for
	// Flux, and does not call it a failure.
	a.patchKustomization(`{spec: {suspend: true}}`)
	held := a.push(map[string]string{"deploy/web.yaml": deployment(2, repo+":v2@"+v2)}, "Promote fx-plain to v2")
	a.waitCommitStatus(held, "pending while Flux is suspended", func(s *gitforge.Status) bool {
		return s.State == "pending" && strings.Contains(s.Description, "Flux has not applied "+held+" yet")
	})
	st, v = a.waitStatus("pending behind the merge", func(st *status.App, v *verdict.Verification) bool {
		return st.Commit == held && st.DeployedCommit == first && v != nil && !v.Verified
	})
	if st.Sync != status.OutOfSync {
		t.Errorf("behind the merge: %s", describe(st, v))
	}

	// Flux resumes and applies it; the rollout reaches the proof.
	a.patchKustomization(`{spec: {suspend: false}}`)
	a.waitApplied(held)
	got := a.waitCommitStatus(held, "success once Flux applies v2", func(s *gitforge.Status) bool { return s.State == "success" })
	if want := "2/2 Pods run " + v2[:len("sha256:")+12] + "…"; got.Description != want {
		t.Errorf("commit status %q, want %q", got.Description, want)
	}

	// Flux applies v3 on a node that kept v2: a mismatch, named.
	if err := env.Node.StaleImage(repo, v2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Node.StaleImage(repo, "") })
	third := a.push(map[string]string{"deploy/web.yaml": deployment(2, repo+":v3@"+v3)}, "Promote fx-plain to v3")
	a.waitApplied(third)
	a.waitCommitStatus(third, "failure on the stale node", func(s *gitforge.Status) bool {
		return s.State == "failure" && strings.Contains(s.Description, "Mismatch")
	})
}
