package main

import (
	"pinbot.dev/pinbot/hack/internal/command"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/internal/imagebuild"
)

const (
	testVersion = "v0.3.0"
	moduleDir   = "../.."
)

// TestMakeRelease runs what `make release VERSION=v0.3.0 IMAGE=…` does,
// into a temporary directory and go-containerregistry's registry on
// loopback, for one linux and one darwin platform (the four of a real
// release are the same code, twice as long): the binaries, their SBOMs,
// checksums.txt and the provenance; both images with their annotations
// and attached provenance; and the debug image's shell runs pinbot.
func TestMakeRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles pinbot for two platforms; skipped under testing.Short (-short)")
	}
	if err := checkStatic("/bin/busybox"); err != nil {
		t.Fatalf("the debug image needs Debian's busybox-static (make test-deps installs it): %s", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	repo := u.Host + "/platform/pinbot"
	out := filepath.Join(t.TempDir(), "dist")
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"--version", testVersion, "--out", out, "--dir", moduleDir, "--image", repo,
		"--platforms", "linux/amd64,darwin/arm64", "--busybox", "linux/amd64=/bin/busybox",
		"--ldflags", "-X pinbot.dev/pinbot/internal/buildinfo.Version=" + testVersion},
		&stdout, &stderr, func(k string) string {
			if k == "SOURCE_DATE_EPOCH" {
				return "1796128395"
			}
			return ""
		})
	if err != nil {
		t.Fatalf("%s\n%s", err, stderr.String())
	}

	// The files, each in checksums.txt with its real SHA-256.
	sums, err := os.ReadFile(filepath.Join(out, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		sum, file, ok := strings.Cut(l, "  ")
		if !ok {
			t.Fatalf("checksums.txt line %q: want SHA-256, two spaces, name", l)
		}
		listed[file] = sum
	}
	for _, f := range []string{"pinbot-linux-amd64", "pinbot-darwin-arm64", "pinbot-linux-amd64.cdx.json",
		"pinbot-darwin-arm64.cdx.json", "provenance.intoto.json"} {
		got, err := sha256File(filepath.Join(out, f))
		if err != nil {
			t.Errorf("%s: %s", f, err)
			continue
		}
		if listed[f] != got {
			t.Errorf("checksums.txt says %s is %q; it is %s", f, listed[f], got)
		}
	}

	// The SBOM names pinbot's dependencies as CycloneDX components.
	var bom struct {
		BOMFormat  string `json:"bomFormat"`
		Components []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"components"`
	}
	b, err := os.ReadFile(filepath.Join(out, "pinbot-linux-amd64.cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &bom); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range bom.Components {
		found = found || c.Name == "github.com/google/go-containerregistry"
	}
	if bom.BOMFormat != "CycloneDX" || !found {
		t.Errorf("the SBOM is %q with %d components, want CycloneDX naming go-containerregistry", bom.BOMFormat, len(bom.Components))
	}

	// The release's provenance names the binaries by digest.
	var st imagebuild.Statement
	b, _ = os.ReadFile(filepath.Join(out, "provenance.intoto.json"))
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if st.PredicateType != imagebuild.ProvenanceType || len(st.Subject) != 4 || st.Subject[0].Digest["sha256"] != listed[st.Subject[0].Name] {
		t.Errorf("provenance.intoto.json: %+v, want SLSA provenance of the 4 files by their digests", st)
	}

	// Two images, each an index with OCI annotations and a provenance
	// referrer naming it.
	refs := strings.Fields(stdout.String())
	if len(refs) != 2 {
		t.Fatalf("stdout %q, want the two images' digest references", stdout.String())
	}
	for i, tag := range []string{testVersion, testVersion + "-debug"} {
		d, err := name.NewDigest(refs[i])
		if err != nil {
			t.Fatal(err)
		}
		tagRef, err := name.NewTag(repo + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		byTag, err := remote.Head(tagRef)
		if err != nil || byTag.Digest.String() != d.DigestStr() {
			t.Errorf("%s:%s is %v (%v), want %s", repo, tag, byTag, err, d.DigestStr())
			continue
		}
		idx, err := remote.Index(d)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := idx.IndexManifest()
		if m.Annotations["org.opencontainers.image.version"] != testVersion || m.Annotations["org.opencontainers.image.revision"] == "" {
			t.Errorf("%s: annotations %v, want the version and revision", tag, m.Annotations)
		}
		checkProvenance(t, d)
	}

	// The plain image has no shell; the debug image's shell runs pinbot.
	if fs := rootfs(t, refs[0]); fileExists(filepath.Join(fs, "bin", "sh")) {
		t.Error("the plain image holds /bin/sh")
	}
	fs := rootfs(t, refs[1])
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		cmd = exec.Command("chroot", fs, "/bin/sh", "-c", "pinbot version")
	} else {
		cmd = exec.Command(filepath.Join(fs, "bin", "sh"), "-c", "pinbot version")
		cmd.Env = []string{"PATH=" + filepath.Join(fs, "usr", "local", "bin")}
	}
	got, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(got), testVersion) {
		t.Errorf("sh -c 'pinbot version' in the debug image: %v\n%s", err, got)
	}
}

// checkProvenance finds d's provenance among its referrers and checks that
// its statement names d.
func checkProvenance(t *testing.T, d name.Digest) {
	t.Helper()
	h, _ := v1.NewHash(d.DigestStr())
	refs, err := remote.Referrers(d.Context().Digest(h.String()))
	if err != nil {
		t.Fatalf("referrers of %s: %s", d, err)
	}
	m, _ := refs.IndexManifest()
	for _, desc := range m.Manifests {
		if desc.ArtifactType != string(imagebuild.InTotoMediaType) {
			continue
		}
		img, err := remote.Image(d.Context().Digest(desc.Digest.String()))
		if err != nil {
			t.Fatal(err)
		}
		layers, _ := img.Layers()
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		var st imagebuild.Statement
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Subject) != 1 || "sha256:"+st.Subject[0].Digest["sha256"] != d.DigestStr() {
			t.Errorf("the provenance of %s names %+v", d, st.Subject)
		}
		return
	}
	t.Errorf("%s has no in-toto referrer among %d", d, len(m.Manifests))
}

// rootfs extracts the linux/amd64 image of the index ref into a directory.
func rootfs(t *testing.T, ref string) string {
	t.Helper()
	d, _ := name.NewDigest(ref)
	idx, err := remote.Index(d)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := idx.IndexManifest()
	var img v1.Image
	for _, desc := range m.Manifests {
		if desc.Platform != nil && desc.Platform.OS == "linux" && desc.Platform.Architecture == "amd64" {
			img, err = idx.Image(desc.Digest)
		}
	}
	if img == nil || err != nil {
		t.Fatalf("%s has no linux/amd64 image (%v)", ref, err)
	}
	dir := t.TempDir()
	untar := exec.Command("tar", "-x", "-C", dir)
	untar.Stdin = mutate.Extract(img)
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("extracting %s: %v\n%s", ref, err, out)
	}
	return dir
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// TestReleaseUsage: a version that is no release's is refused before
// anything is built, naming the flag.
func TestReleaseUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--version", "e6f9ea3-dirty"},
		{"--version", "v0.3"},
		{"--version", "v0.3.0", "--platforms", "linux"},
		{"--version", "v0.3.0", "--image", "r.example/p", "--busybox", "linux/amd64"},
	} {
		err := run(context.Background(), args, io.Discard, io.Discard, func(string) string { return "" })
		var ue *command.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "flag --") {
			t.Errorf("run %q: %v, want a usage error naming the flag", args, err)
		}
	}
}
