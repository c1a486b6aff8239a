package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
)

// TestConfigValidate: the typos a new user made (path:, reviewer:) and a
// signature key that is not there are caught offline, naming file:line;
// a good pair of files passes; $PINBOT_CONFIG is the default file.
func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	good := filepath.Join(dir, "pinbot.yaml")
	writeTestFile(t, filepath.Join(repo, ".pinbot.yaml"), "targets:\n  - name: prod\n    path: [envs/prod/**]\nreviewer: [alice]\n")
	writeTestFile(t, good, "apps:\n  - name: web\n    repo: https://gitea.example/o/r.git\n    namespace: web\n")
	code, stdout, _ := run(t, "config", "validate", filepath.Join(repo, ".pinbot.yaml"), good)
	if code != exitError {
		t.Errorf("exit %d, want %d", code, exitError)
	}
	for _, want := range []string{".pinbot.yaml: invalid repository config", ".pinbot.yaml:3: field path not found", ".pinbot.yaml:4: field reviewer not found", good + ": valid reconciler config"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}

	signed := filepath.Join(dir, "signed")
	writeTestFile(t, filepath.Join(signed, ".pinbot.yaml"), "signatures:\n  - images: [r.example/*]\n    keys: [keys/cosign.pub]\n")
	code, stdout, _ = run(t, "config", "validate", filepath.Join(signed, ".pinbot.yaml"), "-o", "json")
	var got []output.Validated
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != exitError || len(got) != 1 || got[0].Valid || !strings.Contains(got[0].Error, ".pinbot.yaml:3: signatures[0].keys[0]: key keys/cosign.pub") {
		t.Errorf("a missing key: exit %d, %s (%v)", code, stdout, err)
	}

	t.Setenv("PINBOT_CONFIG", good)
	t.Chdir(dir)
	if code, stdout, stderr := run(t, "config", "validate"); code != exitOK || !strings.Contains(stdout, "valid reconciler config") {
		t.Errorf("$PINBOT_CONFIG: exit %d, %q %q", code, stdout, stderr)
	}
}

// TestConfigValidateTogether: a .pinbot.yaml validated with serve's
// config must name, in its environments, apps serve runs; where serve
// discovers apps, an unlisted one is a note, not an error.
func TestConfigValidateTogether(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo", ".pinbot.yaml")
	writeTestFile(t, repo, "environments:\n  - name: staging\n    paths: [envs/staging/**]\n    apps: [web-staging]\n"+
		"  - name: prod\n    from: staging\n    paths: [envs/prod/**]\n    apps: [web-prod]\n")
	listed := filepath.Join(dir, "listed.yaml")
	writeTestFile(t, listed, "apps:\n  - name: web-staging\n    repo: https://gitea.example/o/r.git\n    namespace: web\n")
	discovering := filepath.Join(dir, "discovering.yaml")
	writeTestFile(t, discovering, "apps:\n  - name: web-staging\n    repo: https://gitea.example/o/r.git\n    namespace: web\n"+
		"discover:\n  - argocd: {namespace: argocd, annotated: true}\n")
	all := filepath.Join(dir, "all.yaml")
	writeTestFile(t, all, "apps:\n  - name: web-staging\n    repo: https://gitea.example/o/r.git\n    namespace: web\n"+
		"  - name: web-prod\n    repo: https://gitea.example/o/r.git\n    namespace: web-prod\n")
	for _, tc := range []struct {
		name, serve string
		code        int
		want        string
	}{
		{"an app serve does not run", listed, exitError, "environments name apps " + listed + " does not run: prod/web-prod: those environments prove nothing"},
		{"serve discovers apps", discovering, exitOK, "note: environments name apps " + discovering + " does not run: prod/web-prod; they must be discovered"},
		{"every app", all, exitOK, repo + ": valid repository config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "config", "validate", repo, tc.serve)
			if code != tc.code || !strings.Contains(stdout, tc.want) {
				t.Errorf("exit %d, want %d; output lacks %q:\n%s%s", code, tc.code, tc.want, stdout, stderr)
			}
		})
	}
	// Alone, the .pinbot.yaml has nothing to be checked against.
	if code, stdout, _ := run(t, "config", "validate", repo); code != exitOK {
		t.Errorf(".pinbot.yaml alone: exit %d\n%s", code, stdout)
	}
}

// TestConfigValidateWaveClusters: the clusters a .pinbot.yaml's waves
// name must be clusters serve's config knows (its own, "in-cluster", or
// a kubeconfig Secret an app is applied through); the unknown one is
// named at its line. Where serve has verify-only apps, whose clusters
// only Argo CD or Flux know, it is a note.
func TestConfigValidateWaveClusters(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo", ".pinbot.yaml")
	writeTestFile(t, repo, "environments:\n  - name: prod\n    apps: [web-eu-1, web-eu-2, web-us-1]\n    waves:\n"+
		"      - {name: canary, paths: [envs/eu-1/**], clusters: [eu-1]}\n"+
		"      - name: rest\n        paths: [envs/eu-2/**, envs/us-1/**]\n        clusters:\n          - eu-2\n          - us-9\n")
	app := func(name, cluster string) string {
		return "  - name: " + name + "\n    repo: https://gitea.example/o/r.git\n    namespace: web\n    cluster: {kubeConfig: {secretRef: {name: " + cluster + "}}}\n"
	}
	own := filepath.Join(dir, "own.yaml")
	writeTestFile(t, own, "apps:\n"+app("web-eu-1", "eu-1")+app("web-eu-2", "eu-2")+app("web-us-1", "us-1"))
	argo := filepath.Join(dir, "argo.yaml")
	writeTestFile(t, argo, "apps:\n"+app("web-eu-1", "eu-1")+app("web-eu-2", "eu-2")+"  - name: web-us-1\n    argocd: {application: web-us-1}\n")
	code, stdout, stderr := run(t, "config", "validate", repo, own)
	if want := repo + `:10: wave rest of prod names cluster "us-9", which no app of ` + own; code != exitError || !strings.Contains(stdout, want) {
		t.Errorf("an unknown cluster: exit %d; want %d and %q:\n%s%s", code, exitError, want, stdout, stderr)
	}
	code, stdout, stderr = run(t, "config", "validate", repo, argo)
	if want := `note: ` + repo + `:10: wave rest of prod names cluster "us-9"`; code != exitOK || !strings.Contains(stdout, want) {
		t.Errorf("beside a verify-only app: exit %d; want %d and %q:\n%s%s", code, exitOK, want, stdout, stderr)
	}
}

// TestConfigValidateSeparableWaves: a wave whose kustomization reads a
// pinned base that feeds another wave too is refused, naming the
// reference's file and line; pinning in each overlay is valid.
func TestConfigValidateSeparableWaves(t *testing.T) {
	dir := t.TempDir()
	const digest = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	writeTestFile(t, filepath.Join(dir, ".pinbot.yaml"), "environments:\n  - name: prod\n    waves:\n"+
		"      - {name: canary, paths: [envs/eu-1/**], apps: [web-eu-1]}\n      - {name: rest, paths: [envs/us-1/**], apps: [web-us-1]}\n")
	writeTestFile(t, filepath.Join(dir, "base", "kustomization.yaml"), "resources: [deploy.yaml]\n")
	writeTestFile(t, filepath.Join(dir, "base", "deploy.yaml"), "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n        - {name: app, image: registry.example/org/web@"+digest+"}\n")
	for _, w := range []string{"eu-1", "us-1"} {
		writeTestFile(t, filepath.Join(dir, "envs", w, "kustomization.yaml"), "resources: [../../base]\n")
	}
	code, stdout, stderr := run(t, "config", "validate", filepath.Join(dir, ".pinbot.yaml"))
	if want := filepath.Join(dir, "envs", "eu-1", "kustomization.yaml") + ":1: wave prod.canary reads base/deploy.yaml, which pins registry.example/org/web outside the wave's paths and feeds prod.canary and prod.rest"; code != exitError || !strings.Contains(stdout, want) {
		t.Errorf("a base feeding both waves: exit %d; want %d and %q:\n%s%s", code, exitError, want, stdout, stderr)
	}
	for _, w := range []string{"eu-1", "us-1"} {
		writeTestFile(t, filepath.Join(dir, "envs", w, "kustomization.yaml"), "resources: [../../base]\nimages:\n  - {name: registry.example/org/web, digest: "+digest+"}\n")
	}
	if code, stdout, stderr := run(t, "config", "validate", filepath.Join(dir, ".pinbot.yaml")); code != exitOK {
		t.Errorf("each overlay pinning the image: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestReferenceIsCurrent: docs/cli is what the commands say; change a
// command or flag, and make docs writes it anew.
func TestReferenceIsCurrent(t *testing.T) {
	dir := t.TempDir()
	if err := WriteReference(dir); err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	got, _ := filepath.Glob(filepath.Join("..", "..", "..", "docs", "cli", "*.md"))
	if len(got) != len(want) {
		t.Errorf("docs/cli has %d pages, the commands make %d: run make docs", len(got), len(want))
	}
	for _, w := range want {
		a, _ := os.ReadFile(w)
		b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "cli", filepath.Base(w)))
		if err != nil || string(a) != string(b) {
			t.Errorf("docs/cli/%s is not what the commands say: run make docs", filepath.Base(w))
		}
	}
}
