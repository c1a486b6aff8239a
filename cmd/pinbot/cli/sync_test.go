package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSyncFlagErrors(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "pinbot.yaml")
	if err := os.WriteFile(cfg, []byte("apps:\n  - {name: web, repo: 'http://127.0.0.1:1/o/r.git', namespace: web}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"sync", "web", "--config", cfg, "--dry-run", "--wait", "1m"}, "flag --wait: a dry run applies nothing to wait for"},
		{[]string{"sync", "web", "--config", cfg, "--prune=maybe"}, `invalid argument "maybe" for "--prune"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, exitUsage, tc.stderr)
			}
		})
	}
}
