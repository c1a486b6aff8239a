package reconciler_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/registry"
)

// The proof's traps, on the real control plane and Gitea's registry.

// A runtime that names another repository (a mirror, or CRI-O's first
// repoDigest) for the pinned digest runs what Git pins: Verified, and the
// verdict names the other repository.
func TestMirrorNamedImageIDIsVerified(t *testing.T) {
	s := newScenario(t, "mirrored", "{}")
	img := pushImage(t, "mirrored-app", "v1")
	mirror := "mirror.local:5000/hub/" + org + "/mirrored-app"
	env.node.SetImageIDRewrite(func(id string) string { return strings.Replace(id, img.repo, mirror, 1) })
	t.Cleanup(func() { env.node.SetImageIDRewrite(nil) })
	s.push(map[string]string{"app/deploy.yaml": deployment(2, img.ref())}, "Pin v1")
	st, v, err := s.r.Sync(testCtx, s.name, rollout)
	if err != nil || !st.Verified {
		t.Fatalf("sync: %v; %s", err, describe(st, v))
	}
	for _, c := range v.Containers {
		if c.RunningRepository != mirror || !strings.Contains(c.Reason, "another repository, "+mirror+", for the same digest") ||
			!slices.Contains(c.Evidence, `imageID "`+mirror+"@"+img.digest+`"`) {
			t.Errorf("container %s: repository %q, reason %q, evidence %q", c.Pod, c.RunningRepository, c.Reason, c.Evidence)
		}
	}
}

// Git pins the amd64 child of an index and the runtime reports the index:
// the registry proves the relation for the Node's platform. With the
// registry down, the same Pods are Inconclusive, never Verified nor
// Mismatch.
func TestIndexOfPinnedChildProvenThroughRegistry(t *testing.T) {
	s := newScenario(t, "idxpair", "{}")
	idx := pushIndex(t, "idxpair-app", "v1")
	child := idx.children["amd64"]
	env.node.SetImageIDRewrite(func(id string) string { return strings.Replace(id, child, idx.digest, 1) })
	t.Cleanup(func() { env.node.SetImageIDRewrite(nil) })
	s.push(map[string]string{"app/deploy.yaml": deployment(2, idx.repo+"@"+child)}, "Pin the amd64 child")
	st, v, err := s.r.Sync(testCtx, s.name, rollout)
	if err != nil || !st.Verified {
		t.Fatalf("sync: %v; %s", err, describe(st, v))
	}
	for _, c := range v.Containers {
		if c.RunningDigest != idx.digest || !strings.Contains(c.Reason, "whose only linux/amd64 child Git pins") ||
			!slices.ContainsFunc(c.Evidence, func(e string) bool { return strings.HasPrefix(e, "registry: running index ") }) {
			t.Errorf("container %s: running %s, reason %q, evidence %q", c.Pod, c.RunningDigest, c.Reason, c.Evidence)
		}
	}

	down, err := registry.New(registry.WithRetry(0), registry.WithTransport(refusing{}))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reconciler.New(cfg, env.cluster.Config(), reconciler.WithRegistry(down), reconciler.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	v, err = r.Verify(testCtx, s.name)
	if err != nil {
		t.Fatal(err)
	}
	if v.Verified || len(v.Containers) != 2 {
		t.Fatalf("with the registry down: verified %t, %d containers", v.Verified, len(v.Containers))
	}
	for _, c := range v.Containers {
		if c.Verdict != verdict.Inconclusive || !strings.Contains(c.Reason, "registry unreachable for "+idx.repo+"@"+child) {
			t.Errorf("container %s with the registry down: %s, %q", c.Pod, c.Verdict, c.Reason)
		}
	}
	if got := verdict.StateOf(v); got != verdict.Inconclusive {
		t.Errorf("state %s, want Inconclusive", got)
	}
}

// refusing is a network on which the registry is down.
type refusing struct{}

func (refusing) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("connect: connection refused")
}

// During a rollout whose new Pods cannot start, the previous
// ReplicaSet's Pods keep running the pinned digest: they are listed apart
// and do not prove the new revision.
func TestOldReplicaSetPodsDoNotCount(t *testing.T) {
	s := newScenario(t, "oldrs", "{}")
	img := pushImage(t, "oldrs-app", "v1")
	s.push(map[string]string{"app/deploy.yaml": deployment(2, img.ref())}, "Pin v1")
	if st, v, err := s.r.Sync(testCtx, s.name, rollout); err != nil || !st.Verified {
		t.Fatalf("first sync: %v; %s", err, describe(st, v))
	}
	// The same digest in a template no node can run (no s390x node).
	s.push(map[string]string{"app/deploy.yaml": deploymentOn("s390x", 2, img.ref())}, "Move to s390x")
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatal(err)
	}
	st, v := s.waitStatus(rollout, "the new revision's Pod pending beside the old ones", func(_ *status.App, v *verdict.Verification) bool {
		return len(v.Containers) == 1 && len(v.OldRevisions) == 2
	})
	if st.Verified || v.Verified || v.Containers[0].Verdict != verdict.Pending ||
		!slices.ContainsFunc(v.Reasons, func(r string) bool { return strings.Contains(r, "1/2 Pods of the current revision") }) {
		t.Errorf("verification during the stuck rollout: %s; reasons %q", describe(st, v), v.Reasons)
	}
	for _, c := range v.OldRevisions {
		if c.Verdict != verdict.Verified || c.RunningDigest != img.digest || c.Revision == v.Containers[0].Revision {
			t.Errorf("old Pod %s: %s running %s, revision %q (current %q)", c.Pod, c.Verdict, c.RunningDigest, c.Revision, v.Containers[0].Revision)
		}
	}
}

// A Deployment whose controller has not observed its generation yet is
// not final, whatever its Pods run; once observed, it verifies.
func TestUnobservedGenerationIsNotFinal(t *testing.T) {
	s := newScenario(t, "unobserved", "{}")
	img := pushImage(t, "unobserved-app", "v1")
	s.push(map[string]string{"app/deploy.yaml": deployment(2, img.ref())}, "Pin v1")
	if st, v, err := s.r.Sync(testCtx, s.name, rollout); err != nil || !st.Verified {
		t.Fatalf("first sync: %v; %s", err, describe(st, v))
	}
	resume, err := env.cluster.PauseControllers()
	if err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = resume()
		}
	})
	s.push(map[string]string{"app/deploy.yaml": deployment(3, img.ref())}, "Scale to 3")
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatal(err)
	}
	st, v, err := s.r.Status(testCtx, s.name)
	if err != nil {
		t.Fatal(err)
	}
	if st.Verified || v.Verified || !slices.ContainsFunc(v.Reasons, func(r string) bool { return strings.Contains(r, "not yet observed by its controller") }) {
		t.Errorf("with the controller paused: %s; reasons %q", describe(st, v), v.Reasons)
	}
	resumed = true
	if err := resume(); err != nil {
		t.Fatal(err)
	}
	s.waitStatus(rollout, "verified once observed", func(st *status.App, v *verdict.Verification) bool {
		return st.Verified && len(v.Containers) == 3
	})
}
