package gitea

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// modulePath is the first line of the go.mod that marks pinbot's root.
const modulePath = "module pinbot.dev/pinbot"

// BinDir returns the directory holding the peer binaries: $PINBOT_BIN_DIR
// when set, otherwise bin/ under the root of the pinbot module found by
// walking up from the working directory.
func BinDir() (string, error) {
	if dir := os.Getenv("PINBOT_BIN_DIR"); dir != "" {
		return filepath.Abs(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding bin/: %w", err)
	}
	for dir := wd; ; {
		if isPinbotRoot(filepath.Join(dir, "go.mod")) {
			return filepath.Join(dir, "bin"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("finding bin/: no go.mod of pinbot.dev/pinbot above %s; set PINBOT_BIN_DIR", wd)
		}
		dir = parent
	}
}

func isPinbotRoot(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	return s.Scan() && strings.TrimSpace(s.Text()) == modulePath
}

// binaries locates bin/gitea and the Gitea source dir recorded in
// bin/gitea.root (Gitea serves its locale and template files from it).
func binaries(binDir string) (bin, root string, err error) {
	if binDir == "" {
		if binDir, err = BinDir(); err != nil {
			return "", "", err
		}
	}
	bin = filepath.Join(binDir, "gitea")
	if _, err := os.Stat(bin); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", "", fmt.Errorf("no Gitea binary at %s: run `make gitea` first", bin)
		}
		return "", "", fmt.Errorf("finding the Gitea binary: %w", err)
	}
	raw, err := os.ReadFile(bin + ".root")
	if err != nil {
		return "", "", fmt.Errorf("reading Gitea's source dir (run `make gitea`): %w", err)
	}
	root = strings.TrimSpace(string(raw))
	if _, err := os.Stat(filepath.Join(root, "options", "locale")); err != nil {
		return "", "", fmt.Errorf("gitea source dir %s from %s.root has no options/locale (run `make gitea`): %w", root, bin, err)
	}
	return bin, root, nil
}
