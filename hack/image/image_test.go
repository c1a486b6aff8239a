package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"flag"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/internal/imagebuild"
	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
)

// The slow tests compile pinbot for both platforms once per test binary
// (minutes on a loaded machine; the go build cache makes a second compile
// of the same source a relink at most).
const (
	testVersion = "v9.9.9"
	testSource  = "https://gitea.example/platform/pinbot"
	moduleDir   = "../.."
)

var (
	buildOnce sync.Once
	buildDir  string
	built     []imagebuild.Binary
	buildErr  error
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// testOptions are the options of make image for a test, with the labels
// read from this work tree's git.
func testOptions(t *testing.T, image string) *options {
	t.Helper()
	o, err := parse([]string{"--image", image, "--dir", moduleDir, "--source", testSource, "--version", testVersion,
		"--ldflags", "-X pinbot.dev/pinbot/internal/buildinfo.Version=" + testVersion},
		func(k string) string {
			if k == "SOURCE_DATE_EPOCH" {
				return "1796128395"
			}
			return ""
		}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.resolve(context.Background()); err != nil {
		t.Fatal(err)
	}
	return o
}

// binaries compiles pinbot for both platforms once.
func binaries(t *testing.T, o *options) []imagebuild.Binary {
	t.Helper()
	if testing.Short() {
		t.Skip("compiles pinbot for two platforms; skipped under testing.Short (-short)")
	}
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "pinbot-imagetest-"); buildErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		built, buildErr = compile(ctx, o, buildDir, io.Discard)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

// inMemoryRegistry starts go-containerregistry's registry on loopback and
// returns its host:port.
func inMemoryRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// TestMakeImage runs what make image does against the in-memory registry:
// build, push, print the digest, pin deploy/ to it. It pulls the index back,
// runs the amd64 image's pinbot, and builds again for the same digest.
func TestMakeImage(t *testing.T) {
	host := inMemoryRegistry(t)
	o := testOptions(t, host+"/platform/pinbot:"+testVersion)
	bins := binaries(t, o)
	amd64 := bins[0].Path
	ctx := context.Background()

	// Pin a copy of deploy/base with the fresh amd64 pinbot (this machine is
	// linux/amd64), as make image does with bin/pinbot.
	deploy := filepath.Join(t.TempDir(), "deploy")
	if err := os.CopyFS(deploy, os.DirFS(filepath.Join(moduleDir, "deploy", "base"))); err != nil {
		t.Fatal(err)
	}
	o.pinWith, o.pinDir = amd64, deploy
	if err := checkPin(ctx, o); !errors.Is(err, errNoPin) || !strings.Contains(err.Error(), "set newName in "+deploy+"/kustomization.yaml") {
		t.Fatalf("checkPin of %s, which deploy/ does not pin: error %v, want errNoPin saying to set newName", o.pinRepo, err)
	}
	if o.pinRepo, _ = name.NewRepository("gitea.example/platform/pinbot"); checkPin(ctx, o) != nil {
		t.Fatal(checkPin(ctx, o))
	}

	var stdout, stderr bytes.Buffer
	if err := publish(ctx, o, bins, &stdout, &stderr); err != nil {
		t.Fatalf("%s\n%s", err, stderr.String())
	}
	printed := strings.TrimSuffix(stdout.String(), "\n")
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(host) + `/platform/pinbot@sha256:[0-9a-f]{64}$`).MatchString(printed) {
		t.Fatalf("stdout %q, want only %s/platform/pinbot@sha256:…", stdout.String(), host)
	}
	digest := printed[strings.Index(printed, "@")+1:]
	kustomization, err := os.ReadFile(filepath.Join(deploy, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"    newName: gitea.example/platform/pinbot\n", "    newTag: " + testVersion + "\n", "    digest: " + digest + "\n"} {
		if !strings.Contains(string(kustomization), line) {
			t.Errorf("kustomization.yaml lacks %q after pinning:\n%s", line, kustomization)
		}
	}

	idx, err := remote.Index(o.image)
	if err != nil {
		t.Fatal(err)
	}
	checkIndex(t, idx, digest, o)

	// An image tagged in another variant than deploy/ pins is not pinned
	// by pins set; make image must say so rather than leave deploy/ behind.
	other := *o
	if other.image, err = name.NewTag(host + "/platform/pinbot:" + testVersion + "-rc1"); err != nil {
		t.Fatal(err)
	}
	if err := pin(ctx, &other, digest, io.Discard); err == nil || !strings.Contains(err.Error(), "kustomization.yaml:") || !strings.Contains(err.Error(), "was left alone") {
		t.Errorf("pin of a -rc1 tag: error %v, want one naming kustomization.yaml:LINE as left alone", err)
	}

	// The same source gives the same digest: compile again into another
	// directory and assemble again.
	again, err := compile(ctx, o, t.TempDir(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	idx2, err := imagebuild.Index(imagebuild.Options{Binaries: again, CABundle: o.caBundle,
		Labels: imagebuild.Labels(o.revision, o.source, o.version), Created: o.created})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := idx2.Digest(); err != nil || d.String() != digest {
		t.Errorf("second build: digest %s (%v), want %s", d, err, digest)
	}
}

// TestPushToGitea pushes the image to Gitea's own container registry and
// pulls it back.
func TestPushToGitea(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a real Gitea and compiles pinbot; skipped under testing.Short (-short)")
	}
	srv := giteatest.Start(t, gitea.Options{})
	o := testOptions(t, srv.RegistryHost+"/"+srv.AdminUser+"/pinbot:"+testVersion)
	bins := binaries(t, o)
	auth := remote.WithAuth(&authn.Basic{Username: srv.AdminUser, Password: srv.Token})
	var stdout, stderr bytes.Buffer
	if err := publish(context.Background(), o, bins, &stdout, &stderr, auth); err != nil {
		t.Fatalf("%s\n%s", err, stderr.String())
	}
	printed := strings.TrimSpace(stdout.String())
	prefix := srv.RegistryHost + "/" + srv.AdminUser + "/pinbot@sha256:"
	if !strings.HasPrefix(printed, prefix) {
		t.Fatalf("stdout %q, want %s…", printed, prefix)
	}
	idx, err := remote.Index(o.image, auth)
	if err != nil {
		t.Fatal(err)
	}
	checkIndex(t, idx, strings.TrimPrefix(printed, srv.RegistryHost+"/"+srv.AdminUser+"/pinbot@"), o, auth)
}

// checkIndex checks a pulled index: its digest, both platforms, each
// image's config, the arm64 binary's machine, and that the amd64 binary
// runs and reports the version.
func checkIndex(t *testing.T, idx v1.ImageIndex, digest string, o *options, opts ...remote.Option) {
	t.Helper()
	if d, err := idx.Digest(); err != nil || d.String() != digest {
		t.Fatalf("pulled index digest %s (%v), want %s", d, err, digest)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range im.Manifests {
		platforms = append(platforms, d.Platform.String())
	}
	if diff := cmp.Diff([]string{"linux/amd64", "linux/arm64"}, platforms); diff != "" {
		t.Fatalf("platforms (-want +got):\n%s", diff)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.revision": o.revision,
		"org.opencontainers.image.source":   testSource,
		"org.opencontainers.image.version":  testVersion,
	}
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(o.revision) {
		t.Errorf("revision label %q, want a commit SHA", o.revision)
	}
	for _, d := range im.Manifests {
		img, err := remote.Image(o.image.Context().Digest(d.Digest.String()), opts...)
		if err != nil {
			t.Fatalf("%s: %s", d.Platform, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"/usr/local/bin/pinbot"}, cfg.Config.Entrypoint); diff != "" {
			t.Errorf("%s: entrypoint (-want +got):\n%s", d.Platform, diff)
		}
		if cfg.Config.User != "65532:65532" {
			t.Errorf("%s: user %q, want 65532:65532", d.Platform, cfg.Config.User)
		}
		if diff := cmp.Diff(wantLabels, cfg.Config.Labels); diff != "" {
			t.Errorf("%s: labels (-want +got):\n%s", d.Platform, diff)
		}
		bin := extract(t, img, "usr/local/bin/pinbot")
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatalf("%s: %s", d.Platform, err)
		}
		machine := f.Machine
		f.Close()
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[d.Platform.Architecture]
		if machine != want {
			t.Errorf("%s: binary for %s, want %s", d.Platform, machine, want)
		}
		if d.Platform.Architecture != "amd64" {
			continue
		}
		out, err := exec.Command(bin, "version").CombinedOutput()
		if err != nil {
			t.Fatalf("%s version: %s: %s", bin, err, out)
		}
		if !strings.HasPrefix(string(out), "pinbot "+testVersion+"\n") || !strings.Contains(string(out), "\n  platform: linux/amd64\n") {
			t.Errorf("pinbot version printed %q, want pinbot %s and its platform, linux/amd64", out, testVersion)
		}
	}
}

// extract writes the file at path in img's flattened filesystem to a
// temporary executable and returns its path.
func extract(t *testing.T, img v1.Image, path string) string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("the image holds no %s", path)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != path {
			continue
		}
		if h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: mode %o owner %d:%d, want 755 0:0", path, h.Mode, h.Uid, h.Gid)
		}
		out := filepath.Join(t.TempDir(), filepath.Base(path))
		f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY, 0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, tr); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return out
	}
}
