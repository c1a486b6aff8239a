package helmform

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/pins"
	"pinbot.dev/pinbot/promote"
)

// TestHelmFormsGolden renders each testdata/helm/<case>/original chart with
// a probe digest, pins nginx:1.27 in the form that takes effect, and
// compares the whole tree with expected: a chart that reads .digest gets a
// digest key, one that renders repository:tag gets tag@digest, one that
// renders neither is left alone and said so, and values no chart in the
// tree renders get a digest key, marked unverified.
func TestHelmFormsGolden(t *testing.T) {
	digest := "sha256:" + strings.Repeat("b", 64)
	tests := []struct {
		name    string
		form    pins.HelmForm
		note    string // part of the check's note; "" for none
		changes int
	}{
		{"reads-digest", pins.HelmDigestKey, "", 1},
		{"renders-tag", pins.HelmTagDigest, "", 1},
		{"renders-neither", pins.HelmLeave, "not pinned: chart chart does not render a digest", 0},
		{"unverified", pins.HelmDigestKey, "unverified: apps/release.yaml is not rendered by a chart", 1},
		{"declared", pins.HelmTagDigest, "", 1}, // .pinbot.yaml says chart web renders repository:tag
		// The values shapes real charts use.
		{"library-subchart", pins.HelmDigestKey, "", 1}, // the digest read by a library subchart's named template
		{"registry-image", pins.HelmDigestKey, "", 1},   // ingress-nginx: {registry, image, tag, digest}
		{"sha-key", pins.HelmDigestKey, "", 1},          // {repository, tag, sha}: the bare hex
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := filepath.Join("testdata", "helm", tc.name)
			work := t.TempDir()
			copyDir(t, filepath.Join(base, "original"), work)
			u := pins.Update{Image: "nginx", Digest: digest, Tag: "1.27", PinTags: true}
			choices, checks, err := Forms(context.Background(), os.DirFS(work), u)
			if err != nil {
				t.Fatal(err)
			}
			if len(checks) != 1 {
				t.Fatalf("checks = %+v, want one", checks)
			}
			if got := checks[0].digestChoice.Form; got != tc.form {
				t.Errorf("form = %v, want %v", got, tc.form)
			}
			if note := checks[0].Note(); tc.note == "" && note != "" || !strings.Contains(note, tc.note) {
				t.Errorf("note = %q, want one containing %q", note, tc.note)
			}
			u.Helm = choices
			var skipped []pins.Skip
			changes, err := pins.Set(work, u, pins.WithSkipped(func(s pins.Skip) { skipped = append(skipped, s) }))
			if err != nil {
				t.Fatal(err)
			}
			if len(changes) != tc.changes {
				t.Errorf("%d changes, want %d: %+v", len(changes), tc.changes, changes)
			}
			if tc.form == pins.HelmLeave && (len(skipped) != 1 || skipped[0].Reason != checks[0].digestChoice.Reason) {
				t.Errorf("skipped = %+v, want the mapping with the check's reason", skipped)
			}
			if diff := cmp.Diff(readDir(t, filepath.Join(base, "expected")), readDir(t, work)); diff != "" {
				t.Errorf("tree (-want +got):\n%s", diff)
			}
		})
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	for rel, content := range readDir(t, from) {
		p := filepath.Join(to, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestHelmFormOf(t *testing.T) {
	cfg, err := promote.ParseConfig(promote.ConfigFile, []byte("helm:\n  - {chart: a, digest: key}\n  - {chart: b, digest: tag}\n  - {chart: c, digest: none}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for chart, want := range map[string]pins.HelmForm{"a": pins.HelmDigestKey, "b": pins.HelmTagDigest, "c": pins.HelmLeave} {
		if got, ok := cfg.HelmFormOf(chart); !ok || got != want {
			t.Errorf("HelmFormOf(%s) = %v, %v; want %v", chart, got, ok, want)
		}
	}
	if _, ok := cfg.HelmFormOf("d"); ok {
		t.Error("HelmFormOf(d) found a declaration that is not there")
	}
	if got := releasedChart([]byte("kind: ConfigMap\n---\napiVersion: argoproj.io/v1alpha1\nkind: Application\nspec:\n  sources:\n  - repoURL: x\n  - chart: podinfo\n")); got != "podinfo" {
		t.Errorf("releasedChart of an Application = %q, want podinfo", got)
	}
}
