package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("0123456789abcdef\n"), 0o600); err != nil {
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
		{[]string{"reconcile", "--config", cfg, "--listen", "127.0.0.1:0", "--webhook-secret-file", cfg, "--pprof-listen", "127.0.0.1:http-alt-x"}, exitUsage, "flag --pprof-listen: listen tcp"},
		{[]string{"reconcile", "--config", cfg, "--listen", "127.0.0.1:0", "--webhook-secret-file", cfg, "--dashboard-token-file", empty}, exitUsage, "flag --dashboard-token-file: token file " + empty + ": empty, or blank space only"},
		{[]string{"reconcile", "--config", cfg, "--listen", "127.0.0.1:0", "--webhook-secret-file", cfg, "--gate-token-file", empty}, exitUsage, "flag --gate-token-file: token file " + empty + ": empty"},
		{[]string{"status", "--server", "http://127.0.0.1:1", "--server-token-file", empty}, exitUsage, "flag --server-token-file: token file " + empty + ": empty"},
		{[]string{"status", "--server", "http://pinbot.pinbot-system.svc"}, exitUsage, "flag --server \"http://pinbot.pinbot-system.svc\": plain HTTP to pinbot.pinbot-system.svc, which is not loopback, would send the token in clear"},
		{[]string{"promote", "--forge-url", "http://127.0.0.1:1", "--repo", "o/r", "--image", "r.example/app:v1", "--token-file", token, "--gate-url", "http://pinbot.pinbot-system.svc"}, exitUsage, "flag --gate-url \"http://pinbot.pinbot-system.svc\": plain HTTP"},
		{[]string{"reconcile", "--config", cfg, "--listen", "127.0.0.1:0", "--webhook-secret-file", cfg, "--memory-limit", "lots"}, exitUsage, `flag --memory-limit: "lots": want auto, none, or a size`},
		{[]string{"reconcile", "--config", cfg, "--listen", "127.0.0.1:0", "--webhook-secret-file", cfg, "--memory-limit", "-5Mi"}, exitUsage, `flag --memory-limit: "-5Mi"`},
	} {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.stderr)
			}
		})
	}
}

func TestServeShardsFlagErrors(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "pinbot.yaml")
	if err := os.WriteFile(cfg, []byte("apps:\n  - {name: web, repo: 'http://127.0.0.1:1/o/r.git', namespace: web}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--shards", "3"}, "flag --shards: needs --leader-elect"},
		{[]string{"--shards", "-1", "--leader-elect"}, "flag --shards: want 0 (no sharding) or more, got -1"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := run(t, append([]string{"serve", "--config", cfg, "--listen", "127.0.0.1:0"}, tc.args...)...)
			if code != exitUsage || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, exitUsage, tc.stderr)
			}
		})
	}
}

// TestServeRefusesANonRegularConfig: serve reads its config as a regular
// file of at most 4 MiB, never waiting on a FIFO: /dev/zero and a FIFO are
// refused at once, naming the file. Before, serve read the file whole
// before loading it, and grew without bound on /dev/zero.
func TestServeRefusesANonRegularConfig(t *testing.T) {
	dir := t.TempDir()
	fifo, secret := filepath.Join(dir, "fifo.yaml"), filepath.Join(dir, "secret")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []string{"/dev/zero", fifo} {
		t.Run(cfg, func(t *testing.T) {
			code, _, stderr := run(t, "serve", "--config", cfg, "--listen", "127.0.0.1:0", "--webhook-secret-file", secret)
			if code == exitOK || !strings.Contains(stderr, cfg) {
				t.Errorf("exit %d, stderr %q; want a refusal naming %s", code, stderr, cfg)
			}
		})
	}
}
