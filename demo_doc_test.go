package pinbot_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	giteaenv "pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/snippets"
)

// TestDemoAsPasted runs the README's first command, make demo, as pasted
// in a clone of this repository whose bin/ holds the peers make tools
// built (so the demo builds only pinbot), with PINBOT_DEMO_SERVE=once: the
// demo ends after its serve step instead of serving until Ctrl-C. The demo
// ends on the state it narrates: the bad release is held and prod runs
// the rollback's digest, proven.
func TestDemoAsPasted(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: runs the whole demo on the real peers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	blocks, err := snippets.Read("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var demo *snippets.Block
	for i, b := range snippets.Lang(blocks, "sh") {
		if strings.Contains(b.Text, "make demo") && b.NotRun == "" {
			demo = &snippets.Lang(blocks, "sh")[i]
			break
		}
	}
	if demo == nil {
		t.Fatal("README.md has no sh block running make demo")
	}
	bin, err := giteaenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	clone := userClone(t)
	peers, err := os.ReadDir(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(clone, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range peers {
		switch n := p.Name(); {
		case n == "pinbot" || n == "demo" || strings.HasSuffix(n, ".status") || strings.HasSuffix(n, ".log") || strings.HasPrefix(n, "."):
		default:
			if err := os.Symlink(filepath.Join(bin, n), filepath.Join(clone, "bin", n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MAKELEVEL" && k != "MFLAGS" && k != "PINBOT_BIN_DIR" && k != "GOFLAGS" {
			env = append(env, kv)
		}
	}
	out, err := snippets.Shell(ctx, clone, append(env, "PINBOT_DEMO_SERVE=once", trimpath()), demo.Text)
	if err != nil {
		t.Fatalf("%s, as pasted: %s", demo, err)
	}
	for _, want := range []string{
		"a reviewer merged the rollback",
		"=== prod runs v2 again, proven; v3 is held",
		"held: prod ",
		"Done. Everything the demo started has been stopped.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("make demo's output lacks %q:\n%s", want, out)
		}
	}
	// The ledger it prints last says what the banner does: prod pins and
	// proves one digest, which is not the held one.
	m := regexp.MustCompile(`(?m)^prod\s+\S+\s+(sha256:[0-9a-f]{12})\s+(sha256:[0-9a-f]{12})\s`).FindAllStringSubmatch(out, -1)
	held := regexp.MustCompile(`(?m)^held: prod \S+@(sha256:[0-9a-f]{12})`).FindStringSubmatch(out)
	if len(m) == 0 || held == nil {
		t.Fatalf("make demo printed no prod ledger line or no hold:\n%s", out)
	}
	last := m[len(m)-1]
	if last[1] != last[2] || last[1] == held[1] {
		t.Errorf("the demo's last ledger: prod pins %s, proves %s, holds %s; want the rollback's digest pinned and proven, not the held one", last[1], last[2], held[1])
	}
}
