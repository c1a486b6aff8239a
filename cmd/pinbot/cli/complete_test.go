package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompleteApps: the commands that take APP complete the config's app
// names, through cobra's hidden __complete command as a shell calls it;
// with no config they complete nothing, and never file names.
func TestCompleteApps(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "pinbot.yaml")
	body := "apps:\n" +
		"  - {name: web, repo: 'https://gitea.example/o/r.git', namespace: web}\n" +
		"  - {name: worker, repo: 'https://gitea.example/o/r.git', namespace: web}\n" +
		"  - {name: api, repo: 'https://gitea.example/o/r.git', namespace: api}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, command := range []string{"status", "history", "sync", "verify", "diff", "refresh"} {
		t.Run(command, func(t *testing.T) {
			_, out, _ := runPins(t, "__complete", command, "--config", cfg, "w")
			if got := strings.Fields(out); strings.Join(got, " ") != "web worker :4" {
				t.Errorf("completing %q: %q, want web, worker and the no-file directive :4", "w", out)
			}
		})
	}
	t.Setenv(configEnv, "")
	if _, out, _ := runPins(t, "__complete", "status", ""); strings.TrimSpace(out) != ":4" {
		t.Errorf("completing without a config: %q, want only the no-file directive", out)
	}
}
