package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/hack/internal/command"
	"pinbot.dev/pinbot/internal/imagebuild"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/trust/sign"
)

const moduleDir = "../.."

// testVersion is the source's version: a release of any other is refused.
var testVersion = func() string {
	b, err := os.ReadFile(filepath.Join(moduleDir, "VERSION"))
	if err != nil {
		panic(err)
	}
	return strings.TrimSpace(string(b))
}()

// testEnv is the release's environment in tests: a fixed
// SOURCE_DATE_EPOCH, and env's other variables.
func testEnv(env map[string]string) func(string) string {
	return func(k string) string {
		if k == "SOURCE_DATE_EPOCH" {
			return "1796128395"
		}
		return env[k]
	}
}

// TestMakeRelease runs what `make release VERSION=… REGISTRY=…` does
// without a key, into a temporary directory and go-containerregistry's
// registry on loopback, for one linux and one darwin platform (the four
// of a real release are the same code, twice as long): the archives,
// their SBOMs, the chart, checksums.txt and the provenance; both images
// with their annotations and attached provenance; and the debug image's
// shell, which the release compiled, runs pinbot and its core commands.
func TestMakeRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles pinbot for two platforms; skipped under testing.Short (-short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	repo := u.Host + "/platform/pinbot"
	out := filepath.Join(t.TempDir(), "dist")
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"--version", testVersion, "--out", out, "--dir", moduleDir, "--changelog", changelog(t, "2026-12-06"), "--registry", u.Host + "/platform",
		"--platforms", "linux/amd64,darwin/arm64",
		"--ldflags", "-X pinbot.dev/pinbot/internal/buildinfo.Version=" + testVersion},
		&stdout, &stderr, testEnv(nil))
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
	linuxArchive := "pinbot_" + testVersion + "_linux_amd64"
	darwinArchive := "pinbot_" + testVersion + "_darwin_arm64"
	chartFile := "pinbot-" + strings.TrimPrefix(testVersion, "v") + ".tgz"
	for _, f := range []string{linuxArchive + ".tar.gz", darwinArchive + ".tar.gz", linuxArchive + ".cdx.json",
		darwinArchive + ".cdx.json", chartFile, "provenance.intoto.json"} {
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
	b, err := os.ReadFile(filepath.Join(out, linuxArchive+".cdx.json"))
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

	// Each archive holds the binary, the license, the README and the
	// completions, under one directory.
	for _, a := range []string{linuxArchive, darwinArchive} {
		list, err := exec.Command("tar", "-tzvf", filepath.Join(out, a+".tar.gz")).CombinedOutput()
		if err != nil {
			t.Fatalf("listing %s: %v\n%s", a, err, list)
		}
		for _, member := range []string{"-rwxr-xr-x 0/0 .* " + a + "/pinbot$", a + "/LICENSE$", a + "/README.md$",
			a + "/completions/pinbot.bash$", a + "/completions/_pinbot$", a + "/completions/pinbot.fish$"} {
			if !regexp.MustCompile("(?m)" + member).Match(list) {
				t.Errorf("%s.tar.gz has no member matching %q:\n%s", a, member, list)
			}
		}
	}

	// The release's provenance names its files by digest.
	var st sign.Statement
	b, _ = os.ReadFile(filepath.Join(out, "provenance.intoto.json"))
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	if st.PredicateType != imagebuild.ProvenanceType || len(st.Subject) != 5 || st.Subject[0].Digest["sha256"] != listed[st.Subject[0].Name] {
		t.Errorf("provenance.intoto.json: %+v, want SLSA provenance of the 5 files by their digests", st)
	}

	// Two images, each an index with OCI annotations and a provenance
	// referrer naming it.
	refs := strings.Fields(stdout.String())
	if len(refs) != 3 || !strings.HasPrefix(refs[2], "oci://"+u.Host+"/platform/charts/pinbot:"+strings.TrimPrefix(testVersion, "v")+"@sha256:") {
		t.Fatalf("stdout %q, want the two images' and the chart's digest references", stdout.String())
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
	if plain := rootfs(t, refs[0]); fileExists(filepath.Join(plain, "bin", "sh")) {
		t.Error("the plain image holds /bin/sh")
	}
	debugRoot := rootfs(t, refs[1])
	// What a Jenkins container() step runs: sh, sleep, touch, cat, mv,
	// nohup and pinbot.
	const script = `mkdir -p /tmp; sleep 0.1 0.0005m; touch /tmp/t; echo sh cat ls > /tmp/t.tmp; mv /tmp/t.tmp /tmp/t; cat /tmp/t; ls /bin > /tmp/ls; nohup pinbot version`
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		cmd = exec.Command("chroot", debugRoot, "/bin/sh", "-ec", script)
	} else {
		cmd = exec.Command(filepath.Join(debugRoot, "bin", "sh"), "-ec", script)
		cmd.Env = []string{"PATH=" + filepath.Join(debugRoot, "usr", "local", "bin") + ":" + filepath.Join(debugRoot, "bin")}
	}
	got, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(got), testVersion) || !strings.Contains(string(got), "sh cat ls") {
		t.Errorf("sh -ec %q in the debug image: %v\n%s", script, err, got)
	}
	jenkinsStep(t, debugRoot)
}

// jenkinsStep runs a step as the Kubernetes plugin of Jenkins launches
// it in a container() (durable-task's launcher line, with its paths), in
// the debug image as its user 65532, and waits for the step's log and
// result. The launcher's shell exits at once and leaves the step running
// in the background: a shell that ended its background jobs with itself
// wrote neither file ("process apparently never started").
func jenkinsStep(t *testing.T, root string) {
	t.Helper()
	const ws = "/home/nonroot/ws/job@tmp/durable-4f2a"
	dir := filepath.Join(root, ws)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	step := "pinbot version\nid -u\necho '{\"prNumber\": 7}' | jq -r .prNumber\npinbot version | grep -ic PINBOT\nexit 3\n"
	if err := os.WriteFile(filepath.Join(dir, "script.sh"), []byte(step), 0o644); err != nil {
		t.Fatal(err)
	}
	launcher := `nohup sh -c "({ while [ -d '` + ws + `' -a \! -f '` + ws + `/jenkins-result.txt' ]; do touch '` + ws + `/jenkins-log.txt'; sleep 3; done } & ` +
		`jsc=durable-0123456789abcdef; JENKINS_SERVER_COOKIE=\$jsc 'sh' -xe '` + ws + `/script.sh' > '` + ws + `/jenkins-log.txt' 2>&1; ` +
		`echo \$? > '` + ws + `/jenkins-result.txt.tmp'; mv '` + ws + `/jenkins-result.txt.tmp' '` + ws + `/jenkins-result.txt'; wait) >&- 2>&- &"`
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		// As the image's user, in its root: the workspace is hers.
		if err := filepath.WalkDir(filepath.Join(root, "home", "nonroot"), func(p string, _ fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, 65532, 65532)
		}); err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command("/bin/sh", "-c", launcher)
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
		cmd.Dir = "/"
		cmd.Env = []string{"PATH=/usr/local/bin:/bin", "HOME=/home/nonroot"}
	} else {
		launcher = strings.ReplaceAll(launcher, ws, dir)
		cmd = exec.Command(filepath.Join(root, "bin", "sh"), "-c", launcher)
		cmd.Env = []string{"PATH=" + filepath.Join(root, "usr", "local", "bin") + ":" + filepath.Join(root, "bin")}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Jenkins launcher: %v\n%s", err, out)
	}
	var result, logged []byte
	poll.Until(t, 30*time.Second, "the step's jenkins-result.txt", func() (bool, string) {
		var err error
		result, err = os.ReadFile(filepath.Join(dir, "jenkins-result.txt"))
		entries, _ := os.ReadDir(dir)
		return err == nil, fmt.Sprintf("the workspace holds %v", entries)
	})
	logged, _ = os.ReadFile(filepath.Join(dir, "jenkins-log.txt"))
	if strings.TrimSpace(string(result)) != "3" || !strings.Contains(string(logged), "+ pinbot version") || !strings.Contains(string(logged), testVersion) ||
		!strings.Contains(string(logged), "\n7\n") {
		t.Errorf("the step's result %q and log:\n%s\nwant 3, pinbot's version traced, and jq's answer", result, logged)
	}
	if os.Geteuid() == 0 && !strings.Contains(string(logged), "\n65532\n") {
		t.Errorf("the step's log:\n%s\nwant id -u to say 65532", logged)
	}
	if !strings.Contains(string(logged), "+ grep -ic PINBOT\n") || !strings.Contains(string(logged), "\n1\n+ exit 3") {
		t.Errorf("the step's log:\n%s\nwant grep to count pinbot's version line", logged)
	}
	// ps reads the /proc a container has (the chroot above has none): run
	// in the host's, it finds this test.
	out, err := exec.Command(filepath.Join(root, "bin", "ps"), "aux").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "PID") || !strings.Contains(string(out), filepath.Base(os.Args[0])) {
		t.Errorf("ps aux: %v\n%s\nwant this test's process listed", err, out)
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
		var st sign.Statement
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
// changelog is a CHANGELOG whose newest heading is the source's version,
// dated date ("unreleased" for none): the release commit's, or not.
func changelog(t *testing.T, date string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "CHANGELOG.md")
	if err := os.WriteFile(p, []byte("# Changelog\n\n## "+testVersion+" ("+date+")\n\n- what changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReleaseRefusesUnreleased: code the CHANGELOG calls unreleased never
// takes the release's version, before anything is compiled.
func TestReleaseRefusesUnreleased(t *testing.T) {
	out := filepath.Join(t.TempDir(), "dist")
	err := run(context.Background(), []string{"--version", testVersion, "--out", out, "--dir", moduleDir, "--changelog", changelog(t, "unreleased")},
		io.Discard, io.Discard, testEnv(nil))
	if err == nil || !strings.Contains(err.Error(), "does not date "+testVersion) {
		t.Errorf("a release of a version the CHANGELOG calls unreleased: %v, want it refused", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused release left %s behind (%v)", out, err)
	}
}

func TestReleaseUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--version", "e6f9ea3-dirty"},
		{"--version", "v0.3"},
		{"--version", "v0.3.0", "--platforms", "linux"},
		{"--version", "v0.3.0", "--registry", "r.example/UPPER"},
	} {
		err := run(context.Background(), args, io.Discard, io.Discard, func(string) string { return "" })
		var ue *command.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "flag --") {
			t.Errorf("run %q: %v, want a usage error naming the flag", args, err)
		}
	}
}

// TestReleaseChecksTheRegistryFirst: a registry over TLS whose CA the
// release was not given is refused before anything is compiled, naming
// CA_FILE, with --out left as it was; never pushed to in plain HTTP. With
// --ca-file the same registry passes the check, over HTTPS.
func TestReleaseChecksTheRegistryFirst(t *testing.T) {
	srv := httptest.NewTLSServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "https://")
	out := filepath.Join(t.TempDir(), "dist")
	args := []string{"--version", testVersion, "--out", out, "--dir", moduleDir, "--changelog", changelog(t, "2026-12-06"), "--registry", host + "/platform", "--platforms", "linux/amd64"}
	err := run(context.Background(), args, io.Discard, io.Discard, testEnv(nil))
	if err == nil || !strings.Contains(err.Error(), "not trusted") || !strings.Contains(err.Error(), "CA_FILE") || !strings.Contains(err.Error(), host) {
		t.Fatalf("a release to a registry of an unknown CA: %v, want it refused naming the registry and CA_FILE", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused release left %s behind (%v)", out, err)
	}

	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := parse(append(args, "--ca-file", ca), testEnv(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.checkRegistry(context.Background()); err != nil {
		t.Fatalf("with --ca-file: %v", err)
	}
	if o.plainHTTP {
		t.Errorf("a TLS registry is to be spoken to in plain HTTP")
	}
}
