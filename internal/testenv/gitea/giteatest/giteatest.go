// Package giteatest gives a test package one real Gitea, started once in
// TestMain and stopped when the tests end:
//
//	func TestMain(m *testing.M) { giteatest.Main(m, gitea.Options{}) }
//
//	func TestSomething(t *testing.T) {
//		srv := giteatest.Server(t)
//		...
//	}
//
// If Gitea cannot start, the package fails loudly with the reason. Only
// under -short is nothing started, and the tests that need Gitea skip.
package giteatest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/testenv/gitea"
)

// startTimeout bounds Gitea's start, including building its seed database
// the first time.
const startTimeout = 2 * time.Minute

var shared *gitea.Server

// Main starts Gitea with opts, runs the package's tests, stops Gitea and
// exits with the tests' code. Call it from TestMain.
func Main(m *testing.M, opts gitea.Options) {
	os.Exit(run(m, opts))
}

func run(m *testing.M, opts gitea.Options) int {
	flag.Parse() // testing.Short reads the parsed flags
	if testing.Short() {
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	srv, err := gitea.Start(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: giteatest: %s\n", err)
		return 1
	}
	shared = srv
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "giteatest: last lines of %s:\n%s\n", srv.LogFile, srv.LogTail(30))
	}
	if err := srv.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: giteatest: stopping Gitea: %s\n", err)
		return 1
	}
	return code
}

// Server returns the package's Gitea, started by Main. Under -short it
// skips the calling test.
func Server(tb testing.TB) *gitea.Server {
	tb.Helper()
	if testing.Short() {
		tb.Skip("needs a real Gitea from bin/gitea; skipped with -short")
	}
	if shared == nil {
		tb.Fatal("giteatest: no Gitea is running: call giteatest.Main(m, gitea.Options{...}) from TestMain")
	}
	return shared
}

// Start starts a separate Gitea for one test (another mode, or one the test
// may break) and stops it when the test ends. Under -short it skips the
// calling test.
func Start(tb testing.TB, opts gitea.Options) *gitea.Server {
	tb.Helper()
	if testing.Short() {
		tb.Skip("needs a real Gitea from bin/gitea; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	srv, err := gitea.Start(ctx, opts)
	if err != nil {
		tb.Fatalf("starting Gitea: %s", err)
	}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("last lines of %s:\n%s", srv.LogFile, srv.LogTail(30))
		}
		if err := srv.Stop(); err != nil {
			tb.Errorf("stopping Gitea: %s", err)
		}
	})
	return srv
}

var seq atomic.Int64

// Name returns a repository or user name unique within the test binary,
// derived from the test's name, so tests sharing one Gitea never collide.
func Name(tb testing.TB) string {
	tb.Helper()
	var b strings.Builder
	for _, r := range strings.ToLower(tb.Name()) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if len(name) > 30 {
		name = name[len(name)-30:]
	}
	return fmt.Sprintf("%s-%d", strings.Trim(name, "-"), seq.Add(1))
}

// ManifestRepo is a manifest repository on a test's Gitea whose
// deploy/app.yaml pins one image of Gitea's registry at v1.
type ManifestRepo struct {
	Srv   *gitea.Server
	Owner string
	Name  string
	App   string // the image repository in Gitea's registry
	V1    string // the digest pinned
}

// NewManifestRepo pushes a random image as App:v1, creates the repository
// pinning it, and points DOCKER_CONFIG at the registry's credentials and
// XDG_CACHE_HOME (the clone cache) at a directory of the test's.
//
// Each of also adds files to the repository's first commit, given the
// directory it is made from and the image's repository and v1 digest.
func NewManifestRepo(tb testing.TB, srv *gitea.Server, also ...func(dir, app, v1 string)) *ManifestRepo {
	tb.Helper()
	r := &ManifestRepo{Srv: srv, Owner: srv.AdminUser, Name: Name(tb)}
	r.App = fmt.Sprintf("%s/%s/%s-app", srv.RegistryHost, r.Owner, r.Name)
	r.V1 = r.Push(tb, "v1")
	dir := tb.TempDir()
	file := filepath.Join(dir, "deploy", "app.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("spec:\n  containers:\n    - image: "+r.App+":v1@"+r.V1+"\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	for _, f := range also {
		f(dir, r.App, r.V1)
	}
	if _, err := srv.CreateRepoFromDir(context.Background(), r.Owner, r.Name, "main", dir); err != nil {
		tb.Fatal(err)
	}
	docker, err := srv.DockerConfig()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Setenv("DOCKER_CONFIG", docker)
	tb.Setenv("XDG_CACHE_HOME", tb.TempDir())
	return r
}

// Push pushes a random image as App:tag and returns its digest.
func (r *ManifestRepo) Push(tb testing.TB, tag string) string {
	tb.Helper()
	d, err := r.Srv.PushRandomImage(r.App + ":" + tag)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}
