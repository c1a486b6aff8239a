package promote_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/promote/pr"
)

// These tests run the real pinbot binary as a child process and kill it
// with SIGKILL at each phase of a promotion (Phase), then check that
// a rerun converges on the real Gitea and its registry.

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// pinbotBinary builds pinbot once per test binary, with -tags pinbotdebug
// so that PINBOT_DEBUG_PAUSE_AT works.
func pinbotBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pinbot-kill-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "pinbot")
		out, err := exec.Command("go", "build", "-tags", "pinbotdebug", "-o", binPath, "pinbot.dev/pinbot/cmd/pinbot").CombinedOutput()
		if err != nil {
			binErr = errors.New("building pinbot: " + err.Error() + "\n" + string(out))
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// promoteArgs are the arguments of `pinbot promote` of digest as tag.
func (r *cliRepo) promoteArgs(tag, digest, cache string) []string {
	return []string{"promote", "--image", r.app + ":" + tag, "--digest", digest, "--cache-dir", cache, "-o", "json",
		"--forge-url", r.srv.URL, "--repo", r.owner + "/" + r.name}
}

// killAt runs pinbot with args until it pauses at phase, then kills it
// with SIGKILL.
func killAt(t *testing.T, phase string, args ...string) {
	t.Helper()
	cmd := exec.Command(pinbotBinary(t), args...)
	cmd.Env = append(os.Environ(), "PINBOT_DEBUG_PAUSE_AT="+phase)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	paused := make(chan string, 1)
	go func() {
		var seen strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if sc.Text() == "pinbot: paused at "+phase {
				paused <- ""
				io.Copy(io.Discard, stderr)
				return
			}
			seen.WriteString(sc.Text() + "\n")
		}
		paused <- "pinbot exited without pausing at " + phase + ":\n" + seen.String()
	}()
	select {
	case msg := <-paused:
		if msg != "" {
			t.Fatal(msg)
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("pinbot did not reach phase %s", phase)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
}

// runPromote runs pinbot to the end and returns the status it printed.
func runPromote(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(pinbotBinary(t), args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("pinbot %s: %s\n%s", strings.Join(args[:1], " "), err, errOut.String())
	}
	var got struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatalf("output is not one JSON object: %s\n%s", err, out.String())
	}
	return got.Status
}

// onePull checks that the repository has exactly one open pull request and
// that it proposes digest, in its hidden block and in its head's file.
func (r *cliRepo) onePull(t *testing.T, digest string) {
	t.Helper()
	forge, err := gitforge.NewGitea(r.srv.URL, r.srv.Token)
	if err != nil {
		t.Fatal(err)
	}
	repo := gitforge.Repo{Owner: r.owner, Name: r.name}
	prs, err := forge.ListPulls(t.Context(), repo, gitforge.StateOpen)
	if err != nil {
		t.Fatal(err)
	}
	if len(prs) != 1 {
		t.Fatalf("%d open pull requests, want 1: %+v", len(prs), prs)
	}
	meta, err := pr.ParseBody(prs[0].Body)
	if err != nil {
		t.Fatalf("pull request #%d body: %s", prs[0].Number, err)
	}
	if len(meta.Images) != 1 || meta.Images[0].Digest != digest || meta.Head != prs[0].HeadSHA {
		t.Errorf("pull request #%d hidden block = %+v (head %s); want digest %s at its head", prs[0].Number, meta, prs[0].HeadSHA, digest)
	}
	c, err := r.srv.Client(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	raw, _, err := c.GetFile(r.owner, r.name, prs[0].HeadSHA, "deploy/app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "@"+digest+"\n") {
		t.Errorf("deploy/app.yaml at the pull request head = %q, want it to pin %s", raw, digest)
	}
}

// TestKillDuringPromote kills `pinbot promote` at each phase; the rerun
// converges on one pull request proposing the digest.
func TestKillDuringPromote(t *testing.T) {
	// The phases by the names PINBOT_DEBUG_PAUSE_AT takes, in order.
	for _, phase := range []string{"fetched", "committed", "pushed", "pull-opened"} {
		t.Run(phase, func(t *testing.T) {
			r := newCLIRepo(t)
			t.Setenv("PINBOT_GITEA_TOKEN", r.srv.Token)
			cache := t.TempDir()
			v2 := r.push(t, "v2")
			args := r.promoteArgs("v2", v2, cache)
			killAt(t, phase, args...)
			status := runPromote(t, args...)
			want := map[string]string{
				"fetched": "opened", "committed": "opened",
				"pushed": "opened", "pull-opened": "unchanged",
			}[phase]
			if status != want {
				t.Errorf("rerun after a kill at %s: status %s, want %s", phase, status, want)
			}
			r.onePull(t, v2)
		})
	}
}

// TestDamagedCloneCache: a cached clone left broken (as by a fetch killed
// midway: truncated packs, refs naming objects never written) is detected
// and cloned again; the next promotion succeeds.
func TestDamagedCloneCache(t *testing.T) {
	r := newCLIRepo(t)
	t.Setenv("PINBOT_GITEA_TOKEN", r.srv.Token)
	cache := t.TempDir()
	v2 := r.push(t, "v2")
	if got := runPromote(t, r.promoteArgs("v2", v2, cache)...); got != "opened" {
		t.Fatalf("first promotion: status %s, want opened", got)
	}
	damaged := 0
	missing := strings.Repeat("de", 20) + "\n"
	err := filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch {
		case strings.HasSuffix(p, ".pack"):
			damaged++
			return os.Truncate(p, 100)
		case strings.Contains(p, ".git/refs/"):
			damaged++
			return os.WriteFile(p, []byte(missing), 0o644)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if damaged == 0 {
		t.Fatalf("found no pack or ref to damage under %s", cache)
	}
	v3 := r.push(t, "v3")
	if got := runPromote(t, r.promoteArgs("v3", v3, cache)...); got != "updated" {
		t.Errorf("promotion on the damaged cache: status %s, want updated", got)
	}
	r.onePull(t, v3)
}

// TestCLIPromoteSuperseded: `pinbot promote` of build v2 after v3 says
// "superseded", exits 0 and writes nothing; --allow-older promotes it.
func TestCLIPromoteSuperseded(t *testing.T) {
	r := newCLIRepo(t)
	t.Setenv("PINBOT_GITEA_TOKEN", r.srv.Token)
	v2, v3 := r.push(t, "v2"), r.push(t, "v3")
	status := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := r.pinbot(t, args...)
		if code != 0 {
			t.Fatalf("pinbot %s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		var got struct {
			Status  string            `json:"status"`
			Changes []json.RawMessage `json:"changes"`
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("output is not one JSON object: %s\n%s", err, stdout)
		}
		if got.Status == "superseded" && len(got.Changes) != 0 {
			t.Errorf("superseded promotion lists %d changes, want none", len(got.Changes))
		}
		return got.Status
	}
	if got := status("promote", "--image", r.app+":v3", "--digest", v3, "-o", "json"); got != "opened" {
		t.Fatalf("promoting v3: status %s, want opened", got)
	}
	if got := status("promote", "--image", r.app+":v2", "--digest", v2, "-o", "json"); got != "superseded" {
		t.Errorf("promoting v2 after v3: status %s, want superseded", got)
	}
	r.onePull(t, v3)
	if got := status("promote", "--image", r.app+":v2", "--digest", v2, "--allow-older", "-o", "json"); got != "updated" {
		t.Errorf("promoting v2 with --allow-older: status %s, want updated", got)
	}
	r.onePull(t, v2)
}
