package main

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/internal/testenv/filetree"
)

// These tests run the built binary and signal or kill it at a named phase
// of `pins set` (PINBOT_DEBUG_PAUSE_AT), then check the tree on disk.

var (
	digestA = "sha256:" + strings.Repeat("a", 64)
	digestB = "sha256:" + strings.Repeat("b", 64)
)

// pinbotBin is the binary under test, built once by TestMain.
var pinbotBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pinbot-bin-")
	if err != nil {
		panic(err)
	}
	pinbotBin = filepath.Join(dir, "pinbot")
	// -tags pinbotdebug: the pause points these tests use exist only in
	// that build.
	build := exec.Command("go", "build", "-tags", "pinbotdebug", "-o", pinbotBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		panic("building pinbot: " + err.Error())
	}
	os.Chmod(dir, 0o755) // so the test run as nobody can execute it
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// manyFiles is a tree of n manifests pinning nginx at digest.
func manyFiles(n int, digest string) map[string]string {
	files := map[string]string{}
	for i := range n {
		files[filepath.Join("apps", string(rune('a'+i%26)), "deploy"+strings.Repeat("x", i/26)+".yaml")] =
			"kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      - image: nginx:1.27@" + digest + " # keep\n"
	}
	return files
}

// readTree returns every file under dir by relative path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// startPaused starts `pinbot args...` with PINBOT_DEBUG_PAUSE_AT=phase and
// returns once it says it paused there.
func startPaused(t *testing.T, phase string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(pinbotBin, args...)
	cmd.Env = append(os.Environ(), "PINBOT_DEBUG_PAUSE_AT="+phase)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	paused := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if sc.Text() == "pinbot: paused at "+phase {
				paused <- nil
				io.Copy(io.Discard, stderr)
				return
			}
		}
		paused <- errors.New("pinbot exited without pausing at " + phase)
	}()
	select {
	case err := <-paused:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("pinbot did not reach phase %s", phase)
	}
	return cmd
}

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(pinbotBin, args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errOut.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errOut.String()
}

// TestSignalStopsPinsSet: SIGINT or SIGTERM while `pins set` stages its
// files stops it before the commit: exit 1, nothing changed, nothing left.
func TestSignalStopsPinsSet(t *testing.T) {
	files := manyFiles(300, digestA)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := filetree.Write(t, files)
			cmd := startPaused(t, "staged", "pins", "set", "nginx@"+digestB, "--dir", dir)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Errorf("pins set after %s: %v, want exit code 1", sig, err)
			}
			if diff := cmp.Diff(files, readTree(t, dir)); diff != "" {
				t.Errorf("tree after %s (-want +got):\n%s", sig, diff)
			}
		})
	}
}

// TestKillDuringPinsSet kills `pins set` with SIGKILL at each phase. The
// next `pins set` converges: every file on the new digest, no temporary
// file or journal left.
func TestKillDuringPinsSet(t *testing.T) {
	const n = 300
	files, want := manyFiles(n, digestA), manyFiles(n, digestB)
	for _, phase := range []string{"staged", "journaled", "renaming"} {
		t.Run(phase, func(t *testing.T) {
			dir := filetree.Write(t, files)
			cmd := startPaused(t, phase, "pins", "set", "nginx@"+digestB, "--dir", dir)
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			left := readTree(t, dir)
			temps := 0
			for p := range left {
				if strings.Contains(filepath.Base(p), ".pinbot-") {
					temps++
				}
			}
			if temps == 0 {
				t.Fatalf("the kill left no temporary file or journal: the test did not stop pinbot mid-set")
			}
			if code, _, errOut := run(t, "pins", "set", "nginx@"+digestB, "--dir", dir); code != 0 {
				t.Fatalf("pins set after the kill: exit %d: %s", code, errOut)
			}
			if diff := cmp.Diff(want, readTree(t, dir)); diff != "" {
				t.Errorf("tree after the rerun (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPinsListUnreadableFile: a file pinbot cannot read is skipped with a
// warning; the rest is listed and the exit code is 0. Run as root, the
// command runs as nobody so that permissions apply.
func TestPinsListUnreadableFile(t *testing.T) {
	dir := filetree.Write(t, map[string]string{
		"a.yaml":      "image: nginx@" + digestA + "\n",
		"secret.yaml": "image: redis@" + digestA + "\n",
		"z.yaml":      "image: busybox@" + digestA + "\n",
	})
	os.Chmod(dir, 0o755)
	for p := dir; p != "/"; p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o001 == 0 && os.Getuid() == 0 {
			os.Chmod(p, fi.Mode().Perm()|0o001) // let nobody through
		}
	}
	if err := os.Chmod(filepath.Join(dir, "secret.yaml"), 0o000); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(pinbotBin, "pins", "list", "--dir", dir, "-o", "json")
	if os.Getuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("pins list: %v: %s", err, errOut.String())
	}
	if !strings.Contains(out.String(), `"file":"a.yaml"`) || !strings.Contains(out.String(), `"file":"z.yaml"`) {
		t.Errorf("pins list did not list the readable files: %s", out.String())
	}
	if !strings.Contains(errOut.String(), "secret.yaml") || !strings.Contains(errOut.String(), "permission denied") {
		t.Errorf("no warning about secret.yaml: %s", errOut.String())
	}
}
