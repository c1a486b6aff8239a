package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReconcileWebhookFlagErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "pinbot.yaml")
	if err := os.WriteFile(cfg, []byte("apps:\n  - {name: web, repo: 'http://127.0.0.1:1/o/r.git', namespace: web}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(webhookSecretEnv, "")
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"reconcile", "--config", cfg, "--listen", "127.0.0.1:0"}, exitUsage, "flag --webhook-secret-file (or $PINBOT_WEBHOOK_SECRET): required with --listen"},
		{[]string{"reconcile", "--config", cfg, "--listen", "127.0.0.1:0", "--webhook-secret-file", empty}, exitUsage, "flag --webhook-secret-file: " + empty + " is empty"},
		{[]string{"reconcile", "--config", cfg, "--listen", "127.0.0.1:0", "--webhook-secret-file", filepath.Join(dir, "nope")}, exitUsage, "flag --webhook-secret-file: open"},
	} {
		t.Run(strings.Join(tc.args[3:], " "), func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.stderr)
			}
		})
	}
}
