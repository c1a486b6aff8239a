package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/policy"
	"pinbot.dev/pinbot/trust/trusttest"
)

// TestPromoteDriftCommands runs `pinbot promote` and `pinbot drift` as a
// user would, against one real Gitea (Git, API and registry) that its
// subtests share.
func TestPromoteDriftCommands(t *testing.T) {
	srv := giteatest.Start(t, gitea.Options{})
	t.Run("promote", func(t *testing.T) { testCLIPromote(t, srv) })
	t.Run("invalid token", func(t *testing.T) { testCLIInvalidToken(t, srv) })
	t.Run("drift", func(t *testing.T) { testCLIDrift(t, srv) })
	t.Run("signature policy", func(t *testing.T) { testCLISignaturePolicy(t, srv) })
	t.Run("protect", func(t *testing.T) { testCLIProtect(t, srv) })
}

// testCLIProtect: pinbot protect says the gate only advises where no rule
// requires pinbot/gate (exit 1), makes it required with --apply, keeping
// a rule's other checks, and then says it is binding; --merge-allow sets
// the rule's merge allow-list, once.
func testCLIProtect(t *testing.T, srv *gitea.Server) {
	m := giteatest.NewManifestRepo(t, srv)
	t.Setenv(tokenEnv, srv.Token)
	args := []string{"protect", "--forge-url", srv.URL, "--repo", m.Owner + "/" + m.Name}
	code, stdout, stderr := run(t, args...)
	if code != exitError || !strings.Contains(stdout, "no branch protection rule covers it") || !strings.Contains(stderr, "the gate only advises") {
		t.Fatalf("no rule: exit %d: %s%s", code, stdout, stderr)
	}
	c, err := srv.Client(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.CreateBranchProtection(m.Owner, m.Name, sdk.CreateBranchProtectionOption{RuleName: "main", EnableStatusCheck: true, StatusCheckContexts: []string{"ci/build"}}); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ := run(t, args...); code != exitError || !strings.Contains(stdout, "rule main does not require pinbot/gate") {
		t.Errorf("a rule without the check: exit %d: %s", code, stdout)
	}
	if code, stdout, stderr := run(t, append(args, "--apply")...); code != exitOK || !strings.Contains(stdout, "made pinbot/gate a required status check (rule main)") ||
		!strings.Contains(stdout, "not binding on its own: any writer can post pinbot/gate herself; every writer of the repository may merge") {
		t.Fatalf("--apply: exit %d: %s%s; want it said that a required status alone does not bind a writer", code, stdout, stderr)
	}
	code, stdout, _ = run(t, append(args, "-o", "json")...)
	var got struct {
		Protection struct{ Checks []string } `json:"protection"`
		Binding    bool                      `json:"binding"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != exitOK || !got.Binding || strings.Join(got.Protection.Checks, ",") != "ci/build,pinbot/gate" {
		t.Errorf("after --apply: exit %d, %+v, %v; want both checks required", code, got, err)
	}
	allow := append(args, "--apply", "--merge-allow", srv.AdminUser)
	if code, stdout, stderr := run(t, allow...); code != exitOK || !strings.Contains(stdout, "set the merge allow-list to "+srv.AdminUser) ||
		!strings.Contains(stdout, "only "+srv.AdminUser+" may merge") || !strings.Contains(stdout, "label a pull request pinbot/merge") {
		t.Fatalf("--merge-allow: exit %d: %s%s; want the list set, and the queue named", code, stdout, stderr)
	}
	bp, _, err := c.GetBranchProtection(m.Owner, m.Name, "main")
	if err != nil || !bp.EnableMergeWhitelist || strings.Join(bp.MergeWhitelistUsernames, ",") != srv.AdminUser || strings.Join(bp.StatusCheckContexts, ",") != "ci/build,pinbot/gate" {
		t.Errorf("the rule after --merge-allow: %+v, %v; want the allow-list set and the checks kept", bp, err)
	}
	if code, stdout, _ := run(t, allow...); code != exitOK || strings.Contains(stdout, "set the merge allow-list") {
		t.Errorf("--merge-allow again: exit %d: %s; want nothing set again", code, stdout)
	}
	labels, _, err := c.ListRepoLabels(m.Owner, m.Name, sdk.ListLabelsOptions{})
	if err != nil || !slices.ContainsFunc(labels, func(l *sdk.Label) bool { return l.Name == gitforge.QueueLabel }) {
		t.Errorf("labels after --merge-allow: %v, %v; want %s there for people to pick", labels, err, gitforge.QueueLabel)
	}
}

// testCLISignaturePolicy: an unsigned digest is refused with exit 1, and
// -o json says which image, digest and rule; once signed by the policy's
// key, it is promoted and -o json says who signed it.
func testCLISignaturePolicy(t *testing.T, srv *gitea.Server) {
	key := trusttest.NewKey(t, trusttest.Ed25519)
	m := giteatest.NewManifestRepo(t, srv, func(dir, app, _ string) {
		writeTestFile(t, filepath.Join(dir, "keys", "cosign.pub"), string(key.PublicPEM(t)))
		writeTestFile(t, filepath.Join(dir, ".pinbot.yaml"), "signatures:\n  - images: ["+app+"]\n    keys: [keys/cosign.pub]\n")
	})
	r := &forgeRepo{ManifestRepo: m, srv: srv, owner: m.Owner, name: m.Name, app: m.App, v1: m.V1}
	t.Setenv(tokenEnv, r.srv.Token)
	v2 := r.push(t, "v2")

	code, stdout, stderr := r.pinbot(t, "promote", "--digest", v2, "--image", r.app+":v2", "-o", "json")
	if code != exitError {
		t.Fatalf("unsigned: exit %d, want %d: %s", code, exitError, stderr)
	}
	var refused struct {
		Error   string        `json:"error"`
		Refused trust.Refusal `json:"refused"`
	}
	if err := json.Unmarshal([]byte(stdout), &refused); err != nil {
		t.Fatalf("output is not one JSON object: %s\n%s", err, stdout)
	}
	if got := refused.Refused; got.Image != r.app || got.Digest != v2 || got.Rule != "signatures[0]" || !strings.Contains(got.Reason, "no signature found") {
		t.Errorf("refused = %+v", got)
	}
	if !strings.Contains(stderr, "is refused by signatures[0]") {
		t.Errorf("stderr does not say why: %s", stderr)
	}

	trusttest.Sign(t, r.app+"@"+v2, key, remote.WithAuth(&authn.Basic{Username: srv.AdminUser, Password: srv.Token}))
	code, stdout, stderr = r.pinbot(t, "promote", "--digest", v2, "--image", r.app+":v2", "-o", "json")
	if code != exitOK {
		t.Fatalf("signed: exit %d: %s", code, stderr)
	}
	var got struct {
		Status     string                       `json:"status"`
		Signatures map[string]policy.Provenance `json:"signatures"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("output is not one JSON object: %s\n%s", err, stdout)
	}
	if s := got.Signatures[r.app]; got.Status != "opened" || !s.Guarded || !strings.HasPrefix(s.Signer, "key keys/cosign.pub") {
		t.Errorf("output = %s", stdout)
	}
}

// forgeRepo is a manifest repository on the Gitea pinning one image of
// its registry at v1, which the CLI promotes into.
type forgeRepo struct {
	*giteatest.ManifestRepo
	srv   *gitea.Server
	owner string
	name  string
	app   string // image repository in Gitea's registry
	v1    string
}

func newForgeRepo(t *testing.T, srv *gitea.Server) *forgeRepo {
	t.Helper()
	m := giteatest.NewManifestRepo(t, srv)
	return &forgeRepo{ManifestRepo: m, srv: srv, owner: m.Owner, name: m.Name, app: m.App, v1: m.V1}
}

// push pushes a random image as tag and returns its digest.
func (r *forgeRepo) push(t *testing.T, tag string) string { return r.Push(t, tag) }

// pinbot runs the CLI with args and the repository's --forge-url and --repo.
func (r *forgeRepo) pinbot(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return run(t, append(args, "--forge-url", r.srv.URL, "--repo", r.owner+"/"+r.name)...)
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func testCLIPromote(t *testing.T, srv *gitea.Server) {
	r := newForgeRepo(t, srv)
	t.Setenv(tokenEnv, r.srv.Token)
	v2 := r.push(t, "v2")
	digestFile := filepath.Join(t.TempDir(), "digest")
	writeTestFile(t, digestFile, v2+"\n") // as Kaniko --digest-file writes it

	code, stdout, stderr := r.pinbot(t, "promote", "--digest-file", digestFile, "--image", r.app+":v2", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "insecure-forge") {
		t.Errorf("plain HTTP to the loopback Gitea was warned about: %s", stderr)
	}
	var got struct {
		PRNumber int64  `json:"prNumber"`
		PRURL    string `json:"prURL"`
		Branch   string `json:"branch"`
		Digest   string `json:"digest"`
		Image    string `json:"image"`
		Status   string `json:"status"`
		Changes  []struct {
			File      string `json:"file"`
			Line      int    `json:"line"`
			Kind      string `json:"kind"`
			Image     string `json:"image"`
			OldDigest string `json:"oldDigest"`
			NewDigest string `json:"newDigest"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("output is not one JSON object: %s\n%s", err, stdout)
	}
	if got.PRNumber == 0 || !strings.HasPrefix(got.PRURL, r.srv.URL+"/") || got.Digest != v2 || got.Image != r.app || got.Status != "opened" ||
		!strings.HasPrefix(got.Branch, "pinbot/default/") || len(got.Changes) != 1 {
		t.Fatalf("output = %s", stdout)
	}
	c := got.Changes[0]
	if c.File != "deploy/app.yaml" || c.Line != 3 || c.Kind != "manifest" || c.Image != r.app || c.OldDigest != r.v1 || c.NewDigest != v2 {
		t.Errorf("change = %+v", c)
	}

	// Text output is the pull request URL; running again changes nothing.
	code, stdout, stderr = r.pinbot(t, "promote", "--digest-file", digestFile, "--image", r.app+":v2")
	if code != exitOK || stdout != got.PRURL+"\n" {
		t.Errorf("second run: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "status=unchanged") {
		t.Errorf("second run did not report unchanged: %s", stderr)
	}
}

func testCLIInvalidToken(t *testing.T, srv *gitea.Server) {
	r := newForgeRepo(t, srv)
	v2 := r.push(t, "v2")
	const bogus = "6f0c9a7e2b41d8853a1e0c7d92b5f3a4e8c1d0b7"
	tokenFile := filepath.Join(t.TempDir(), "token")
	writeTestFile(t, tokenFile, bogus+"\n")

	tests := []struct {
		name string
		args []string
		env  bool
	}{
		{name: "token file, default branch from the API", args: []string{"--token-file", tokenFile}},
		{name: "token file, clone first", args: []string{"--token-file", tokenFile, "--base", "main"}},
		{name: "environment", env: true, args: []string{"--base", "main", "-v"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tokenEnv, "")
			if tc.env {
				t.Setenv(tokenEnv, bogus)
			}
			args := append([]string{"promote", "--image", r.app, "--digest", v2}, tc.args...)
			code, stdout, stderr := r.pinbot(t, args...)
			t.Logf("exit %d, stderr: %s", code, stderr)
			if code != exitError {
				t.Errorf("exit %d, want %d", code, exitError)
			}
			if !strings.Contains(stderr, "401") && !strings.Contains(stderr, "rejected the token") && !strings.Contains(stderr, "authentication") {
				t.Errorf("stderr does not say the token was rejected: %s", stderr)
			}
			if strings.Contains(stdout+stderr, bogus) {
				t.Errorf("the token appears in the output:\nstdout: %s\nstderr: %s", stdout, stderr)
			}
		})
	}
}

func testCLIDrift(t *testing.T, srv *gitea.Server) {
	r := newForgeRepo(t, srv)
	t.Setenv(tokenEnv, r.srv.Token)
	code, stdout, stderr := r.pinbot(t, "drift")
	if code != exitOK || !strings.Contains(stdout, "checked 1 tag, 0 moved") {
		t.Fatalf("unmoved: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	r.push(t, "v1") // the tracked tag moves
	code, stdout, stderr = r.pinbot(t, "drift")
	if code != exitOK || !strings.Contains(stdout, "1 moved") || !strings.Contains(stdout, "1 opened") {
		t.Fatalf("moved: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	t.Log(stdout)
}
