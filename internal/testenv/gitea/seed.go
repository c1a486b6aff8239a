package gitea

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// seedVersion changes whenever the seed's content or app.ini changes in a
// way that makes older seeds unusable.
const seedVersion = "2"

// seedMeta records the admin credentials baked into a seed database.
type seedMeta struct {
	AdminUser     string `json:"admin_user"`
	AdminPassword string `json:"admin_password"`
}

// seedDatabase gives the new server a migrated SQLite database holding the
// admin user.
//
// Migrating an empty database and creating the admin are most of Gitea's
// start-up time, and both give the same result every time, so they run once
// per Gitea binary into a seed kept next to it (bin/gitea.seed/<key>), and
// every start copies the seed's database. When the seed cannot be kept (a
// read-only bin dir), the database is made in place.
func seedDatabase(ctx context.Context, s *Server) error {
	seedDir, err := ensureSeed(ctx, s)
	if err != nil {
		if !errors.Is(err, errNoSeedDir) {
			return err
		}
		return s.makeDatabase(ctx)
	}
	raw, err := os.ReadFile(filepath.Join(seedDir, "seed.json"))
	if err != nil {
		return fmt.Errorf("reading Gitea seed: %w", err)
	}
	var meta seedMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		return fmt.Errorf("reading Gitea seed %s: %w", seedDir, err)
	}
	s.AdminUser, s.AdminPassword = meta.AdminUser, meta.AdminPassword
	s.cfg.StaticRoot = filepath.Join(seedDir, "static")
	if err := s.cfg.write(); err != nil {
		return err
	}
	return copyDir(filepath.Join(seedDir, "data"), filepath.Join(s.Dir, "data"))
}

// makeDatabase migrates a fresh database in s.Dir and creates the admin.
func (s *Server) makeDatabase(ctx context.Context) error {
	if err := s.run(ctx, "migrate"); err != nil {
		return fmt.Errorf("migrating Gitea's database: %w", err)
	}
	if err := s.run(ctx, "admin", "user", "create", "--admin",
		"--username", s.AdminUser, "--password", s.AdminPassword,
		"--email", s.AdminUser+"@example.com", "--must-change-password=false"); err != nil {
		return fmt.Errorf("creating the Gitea admin: %w", err)
	}
	return nil
}

var errNoSeedDir = errors.New("no writable place for the Gitea seed")

// ensureSeed returns the seed directory for s.bin, making it when missing.
// Concurrent makers (parallel test packages) each build in a private
// directory and rename it into place; the first rename wins.
func ensureSeed(ctx context.Context, s *Server) (string, error) {
	key, err := seedKey(s.bin, s.cfg.StaticRoot)
	if err != nil {
		return "", err
	}
	parent := s.bin + ".seed"
	final := filepath.Join(parent, key)
	if _, err := os.Stat(filepath.Join(final, "seed.json")); err == nil {
		return final, nil
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("%w: %w", errNoSeedDir, err)
	}
	tmp, err := os.MkdirTemp(parent, "tmp-")
	if err != nil {
		return "", fmt.Errorf("%w: %w", errNoSeedDir, err)
	}
	defer os.RemoveAll(tmp)

	builder := &Server{
		AdminUser:     DefaultAdminUser,
		AdminPassword: "pw-" + hexString(12),
		Dir:           tmp,
		bin:           s.bin,
		cfg:           newConfig(tmp, s.cfg.StaticRoot, s.cfg.Port, false),
	}
	builder.cfg.JournalMode = "DELETE"
	if err := builder.cfg.write(); err != nil {
		return "", err
	}
	if err := builder.makeDatabase(ctx); err != nil {
		return "", err
	}
	meta, _ := json.Marshal(seedMeta{AdminUser: builder.AdminUser, AdminPassword: builder.AdminPassword})
	if err := os.WriteFile(filepath.Join(tmp, "seed.json"), meta, 0o600); err != nil {
		return "", fmt.Errorf("writing Gitea seed: %w", err)
	}
	if err := makeStaticRoot(s.cfg.StaticRoot, filepath.Join(tmp, "static")); err != nil {
		return "", err
	}
	// Keep only the database; logs and app.ini belong to the builder.
	for _, name := range []string{"custom", "log", "repos"} {
		_ = os.RemoveAll(filepath.Join(tmp, name))
	}
	if err := os.Rename(tmp, final); err != nil {
		if _, statErr := os.Stat(filepath.Join(final, "seed.json")); statErr == nil {
			return final, nil // another process won the race
		}
		return "", fmt.Errorf("storing Gitea seed: %w", err)
	}
	pruneSeeds(parent, key)
	return final, nil
}

// pruneSeeds removes the seeds of older binaries or formats.
func pruneSeeds(parent, keep string) {
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		if e.Name() != keep && !strings.HasPrefix(e.Name(), "tmp-") {
			_ = os.RemoveAll(filepath.Join(parent, e.Name()))
		}
	}
}

// makeStaticRoot builds dst as Gitea's static root: links to the templates,
// public assets and options of the Gitea source dir root, except the license
// texts. Gitea feeds every license it finds to a classifier at start-up,
// which is a sixth of its start-up CPU; the tests never pick a license.
func makeStaticRoot(root, dst string) error {
	if err := os.MkdirAll(filepath.Join(dst, "options", "license"), 0o755); err != nil {
		return fmt.Errorf("making Gitea's static root: %w", err)
	}
	for _, name := range []string{"templates", "public"} {
		if err := os.Symlink(filepath.Join(root, name), filepath.Join(dst, name)); err != nil {
			return fmt.Errorf("making Gitea's static root: %w", err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(root, "options"))
	if err != nil {
		return fmt.Errorf("making Gitea's static root: %w", err)
	}
	for _, e := range entries {
		if e.Name() == "license" {
			continue
		}
		if err := os.Symlink(filepath.Join(root, "options", e.Name()), filepath.Join(dst, "options", e.Name())); err != nil {
			return fmt.Errorf("making Gitea's static root: %w", err)
		}
	}
	return nil
}

// seedKey identifies the binary (size and modification time) and the seed
// format, so a rebuilt Gitea gets a new seed.
func seedKey(bin, root string) (string, error) {
	fi, err := os.Stat(bin)
	if err != nil {
		return "", fmt.Errorf("reading Gitea binary: %w", err)
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s|%d|%d|%s|%s", seedVersion, fi.Size(), fi.ModTime().UnixNano(), root, appINI.Tree.Root.String())))
	return hex.EncodeToString(sum[:8]), nil
}

// copyDir copies the regular files under src into dst.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() || strings.HasSuffix(path, "-shm") {
			return nil
		}
		return copyFile(path, target)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
