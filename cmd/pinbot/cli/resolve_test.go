package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// startRegistry serves go-containerregistry's in-memory registry on
// loopback with a two-platform index (plus an attestation) at multi:v1, and
// returns its host and the index digest.
func startRegistry(t *testing.T) (string, string) {
	t.Helper()
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	var adds []mutate.IndexAddendum
	for _, p := range []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}, {OS: "unknown", Architecture: "unknown"}} {
		img, err := random.Image(256, 1)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
		cf.Config.Labels = map[string]string{"org.opencontainers.image.revision": "abc123"}
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
	ref, err := name.ParseReference(host + "/multi:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	h, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return host, h.String()
}

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Execute(t.Context(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func isolateDockerConfig(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("REGISTRY_AUTH_FILE", filepath.Join(dir, "none.json"))
	t.Setenv("XDG_RUNTIME_DIR", dir)
}

func TestResolveJSON(t *testing.T) {
	isolateDockerConfig(t)
	host, digest := startRegistry(t)
	code, stdout, stderr := run(t, "resolve", host+"/multi:v1", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("output is not JSON: %s\n%s", err, stdout)
	}
	keys := slices.Sorted(maps.Keys(got))
	wantKeys := []string{"annotations", "children", "digest", "index", "labels", "mediaType", "platform", "reference",
		"repository", "revision", "size", "source", "tag", "version"}
	if diff := cmp.Diff(wantKeys, keys); diff != "" {
		t.Errorf("JSON keys (-want +got):\n%s", diff)
	}
	for key, want := range map[string]any{
		"digest": digest, "reference": host + "/multi:v1", "repository": host + "/multi", "tag": "v1",
		"index": true, "mediaType": string(types.OCIImageIndex), "revision": "abc123",
	} {
		if got[key] != want {
			t.Errorf("%s = %v, want %v", key, got[key], want)
		}
	}
	var platforms []any
	for _, c := range got["children"].([]any) {
		platforms = append(platforms, c.(map[string]any)["platform"])
	}
	if diff := cmp.Diff([]any{"linux/amd64", "linux/arm64/v8"}, platforms); diff != "" {
		t.Errorf("children platforms (-want +got):\n%s", diff)
	}
}

func TestResolveText(t *testing.T) {
	isolateDockerConfig(t)
	host, digest := startRegistry(t)
	code, stdout, stderr := run(t, "resolve", host+"/multi@"+digest)
	if code != exitOK {
		t.Fatalf("exit %d, stderr: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if want := "digest      " + digest; lines[0] != want {
		t.Errorf("first line = %q, want %q", lines[0], want)
	}
	for _, want := range []string{
		"reference   " + host + "/multi@" + digest,
		"media type  " + string(types.OCIImageIndex),
		"revision    abc123",
		"labels      org.opencontainers.image.revision=abc123",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("output lacks the line %q:\n%s", want, stdout)
		}
	}
	var platformLines []string
	for _, l := range lines {
		if strings.HasPrefix(l, "platforms ") || strings.HasPrefix(l, "            linux/") {
			platformLines = append(platformLines, strings.Join(strings.Fields(l), " "))
		}
	}
	if len(platformLines) != 2 || !strings.HasPrefix(platformLines[0], "platforms linux/amd64 sha256:") ||
		!strings.HasPrefix(platformLines[1], "linux/arm64/v8 sha256:") {
		t.Errorf("platform lines = %q, want linux/amd64 then linux/arm64/v8 with digests:\n%s", platformLines, stdout)
	}
}

func TestResolveExitCodes(t *testing.T) {
	isolateDockerConfig(t)
	host, _ := startRegistry(t)
	for _, tc := range []struct {
		name       string
		args       []string
		wantCode   int
		wantStderr []string
	}{
		{"no reference", []string{"resolve"}, exitUsage, []string{"accepts 1 arg"}},
		{"two references", []string{"resolve", "a", "b"}, exitUsage, []string{"accepts 1 arg"}},
		{"malformed reference", []string{"resolve", "Not A Ref"}, exitUsage, []string{"REF", "Not A Ref"}},
		{"empty insecure registry", []string{"resolve", "--insecure-registry", "", host + "/multi:v1"}, exitUsage, []string{"--insecure-registry"}},
		{"bad output", []string{"resolve", "-o", "xml", host + "/multi:v1"}, exitUsage, []string{"-o"}},
		{"missing tag", []string{"resolve", host + "/multi:nope"}, exitError, []string{host + "/multi:nope", "404"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.wantCode, stderr)
			}
			for _, s := range tc.wantStderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q does not mention %q", stderr, s)
				}
			}
		})
	}
}
