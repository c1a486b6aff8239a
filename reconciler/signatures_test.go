package reconciler_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pinbot.dev/pinbot/internal/testenv/filetree"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/trusttest"
)

// TestVerifySignatures: an app with verifySignatures applies nothing of a
// commit whose render pins a digest the config's policy refuses; the
// refusal names the object and the image, in the history and on the
// commit. Signed, the same commit syncs, and so does a platform child
// whose tag names a signed index.
func TestVerifySignatures(t *testing.T) {
	s := newScenario(t, "signed", "{automated: false}")
	key := trusttest.NewKey(t, trusttest.ECDSA)
	s.requireSignatures(key)

	unsigned := pushImage(t, "signed-app", "v1")
	sha := s.push(map[string]string{"app/deploy.yaml": deployment(1, unsigned.ref())}, "unsigned")
	_, _, err := s.r.Sync(testCtx, s.name, 0)
	var se *reconciler.SignatureError
	if !errors.As(err, &se) || !errors.Is(err, trust.ErrRefused) {
		t.Fatalf("syncing an unsigned digest: %v; want a refusal", err)
	}
	if !strings.Contains(se.Object.String(), "Deployment") || !strings.Contains(se.Object.String(), "web") || se.Image != unsigned.ref() {
		t.Errorf("refusal names %s and %s; want the Deployment and %s", se.Object, se.Image, unsigned.ref())
	}
	if s.deploymentExists("web") {
		t.Error("the Deployment was applied though its digest is unsigned")
	}
	if e := s.latest(); e.Result != history.Refused || e.Commit != sha || !strings.Contains(e.Reason, unsigned.ref()) || !strings.Contains(e.Reason, "no signature found") {
		t.Errorf("history: %+v; want the commit refused, naming the image", e)
	}
	if st := s.commitStatus(sha); st == nil || st.State != "failure" || !strings.Contains(st.Description, "refused: ") {
		t.Errorf("commit status = %+v; want a failure saying refused", st)
	}

	trusttest.Sign(t, unsigned.ref(), key, env.auth())
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatalf("syncing once signed: %v", err)
	}
	if !s.deploymentExists("web") || s.latest().Result != history.Applied {
		t.Errorf("the signed commit was not applied: %+v", s.latest())
	}

	// A platform child is covered by its index's signature, found through
	// the tag the pin names.
	idx := pushIndex(t, "signed-multi", "v2")
	trusttest.Sign(t, idx.ref(), key, env.auth())
	s.push(map[string]string{"app/deploy.yaml": deployment(1, idx.repo+":v2@"+idx.children["amd64"])}, "child")
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatalf("syncing a child of a signed index: %v", err)
	}

	// A guarded image that pins no digest cannot be vouched for.
	s.push(map[string]string{"app/deploy.yaml": deployment(1, idx.repo+":v2")}, "tag only")
	if _, _, err := s.r.Sync(testCtx, s.name, 0); !errors.Is(err, trust.ErrRefused) || !strings.Contains(err.Error(), "pins no digest") {
		t.Errorf("syncing a tag without a digest: %v; want a refusal", err)
	}
}

// requireSignatures rewrites the scenario's config with a signature
// policy (the key beside the config, as a mounted Secret would be) and
// verifySignatures on its app, and restarts the Reconciler on it.
func (s *scenario) requireSignatures(key *trusttest.Key) {
	s.t.Helper()
	dir := filepath.Dir(s.cfg)
	filetree.WriteIn(s.t, dir, map[string]string{"keys/cosign.pub": string(key.PublicPEM(s.t))})
	b, err := os.ReadFile(s.cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	text := "signatures:\n  - images: [\"" + env.gitea.RegistryHost + "/" + org + "/**\"]\n    keys: [keys/cosign.pub]\n" +
		string(b) + "    verifySignatures: true\n"
	if err := os.WriteFile(s.cfg, []byte(text), 0o600); err != nil {
		s.t.Fatal(err)
	}
	s.reload()
}
