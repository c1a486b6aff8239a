package pins

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// goldenUpdate is a case's update.yaml.
type goldenUpdate struct {
	Image       string `yaml:"image"`
	Digest      string `yaml:"digest"`
	Tag         string `yaml:"tag"`
	PinTags     bool   `yaml:"pin_tags"`
	AnyVariant  bool   `yaml:"any_variant"`
	WantChanges int    `yaml:"want_changes"`
	// WantSkipped lists the pins left out of scope as "file:line tag".
	WantSkipped []string `yaml:"want_skipped"`
	// WantWarnings lists the files Plan and Set warn about, as
	// "file:line".
	WantWarnings []string `yaml:"want_warnings"`
	// WantError, when set, is part of the error Plan and Set must return;
	// expected must then equal original.
	WantError string `yaml:"want_error"`
}

// TestGolden runs Set over a copy of each testdata/<case>/original tree
// and compares the whole result with testdata/<case>/expected.
func TestGolden(t *testing.T) {
	cases, err := filepath.Glob("testdata/*/update.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 20 {
		t.Fatalf("found %d golden cases, want at least 20", len(cases))
	}
	for _, uf := range cases {
		dir := filepath.Dir(uf)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var gu goldenUpdate
			raw, err := os.ReadFile(uf)
			if err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(raw, &gu); err != nil {
				t.Fatalf("%s: %v", uf, err)
			}
			work := t.TempDir()
			copyTree(t, filepath.Join(dir, "original"), work)
			u := Update{Image: gu.Image, Digest: gu.Digest, Tag: gu.Tag, PinTags: gu.PinTags, AnyVariant: gu.AnyVariant}
			var skipped, warned []string
			record := WithSkipped(func(s Skip) { skipped = append(skipped, s.File+":"+strconv.Itoa(s.Line)+" "+s.Tag) })
			warn := WithWarnings(func(file string, err error) {
				var se *SyntaxError
				if !errors.As(err, &se) {
					t.Errorf("warning about %s is %v, want a *SyntaxError", file, err)
					return
				}
				warned = append(warned, se.File+":"+strconv.Itoa(se.Line))
			})

			planned, err := Plan(work, u, record, warn)
			assertTree(t, filepath.Join(dir, "original"), work) // Plan writes nothing
			if gu.WantError != "" {
				if err == nil || !strings.Contains(err.Error(), gu.WantError) {
					t.Fatalf("Plan: %v, want an error containing %q", err, gu.WantError)
				}
				if _, err := Set(work, u); err == nil || !strings.Contains(err.Error(), gu.WantError) {
					t.Fatalf("Set: %v, want an error containing %q", err, gu.WantError)
				}
				assertTree(t, filepath.Join(dir, "expected"), work)
				return
			}
			if err != nil {
				t.Fatalf("Plan: %v", err)
			}
			if diff := cmp.Diff(gu.WantSkipped, skipped); diff != "" {
				t.Errorf("Plan skipped (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(gu.WantWarnings, warned); diff != "" {
				t.Errorf("Plan warned (-want +got):\n%s", diff)
			}
			skipped, warned = nil, nil

			changes, err := Set(work, u, record, warn)
			if err != nil {
				t.Fatalf("Set: %v", err)
			}
			if diff := cmp.Diff(gu.WantSkipped, skipped); diff != "" {
				t.Errorf("Set skipped (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(gu.WantWarnings, warned); diff != "" {
				t.Errorf("Set warned (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(planned, changes); diff != "" {
				t.Errorf("Plan and Set disagree (-plan +set):\n%s", diff)
			}
			if len(changes) != gu.WantChanges {
				t.Errorf("Set made %d changes, want %d:\n%s", len(changes), gu.WantChanges, describe(changes))
			}
			assertTree(t, filepath.Join(dir, "expected"), work)
			checkChangeLines(t, filepath.Join(dir, "original"), filepath.Join(dir, "expected"), changes)

			again, err := Set(work, u)
			if err != nil {
				t.Fatalf("second Set: %v", err)
			}
			if len(again) != 0 {
				t.Errorf("second Set changed again:\n%s", describe(again))
			}
		})
	}
}

// checkChangeLines checks each change's Before and After against the
// original and expected files.
func checkChangeLines(t *testing.T, original, expected string, changes []Change) {
	t.Helper()
	for _, c := range changes {
		want, err := os.ReadFile(filepath.Join(expected, filepath.FromSlash(c.File)))
		if err != nil {
			t.Fatal(err)
		}
		if got := newLineTable(want).text(c.Line); got != c.After {
			t.Errorf("%s:%d: After = %q, expected file has %q", c.File, c.Line, c.After, got)
		}
		if c.Before == "" {
			continue // an added line
		}
		orig, err := os.ReadFile(filepath.Join(original, filepath.FromSlash(c.File)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(orig, []byte(c.Before)) {
			t.Errorf("%s:%d: Before %q is not a line of the original", c.File, c.Line, c.Before)
		}
		if c.Before == c.After {
			t.Errorf("%s:%d: change leaves the line as it was", c.File, c.Line)
		}
	}
}

func describe(changes []Change) string {
	var b strings.Builder
	for _, c := range changes {
		b.WriteString(c.File + ":" + strconv.Itoa(c.Line) + "\n  - " + c.Before + "\n  + " + c.After + "\n")
	}
	return b.String()
}

// copyTree copies regular files and directories, keeping file modes.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readTree returns every regular file under dir by slash path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			files[filepath.ToSlash(rel)] = "symlink -> " + target
			return err
		}
		b, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// assertTree compares two trees whole: the same files, byte for byte.
func assertTree(t *testing.T, want, got string) {
	t.Helper()
	if diff := cmp.Diff(readTree(t, want), readTree(t, got)); diff != "" {
		t.Errorf("tree %s differs from %s (-want +got):\n%s", got, want, diff)
	}
}
