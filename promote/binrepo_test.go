package promote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
)

// cliRepo is a manifest repository on the package's Gitea pinning one
// image of Gitea's registry, for the tests that run the real pinbot
// binary against it (the CLI's own tests live in cmd/pinbot/cli; promote's
// tests never import the CLI package).
type cliRepo struct {
	srv   *gitea.Server
	owner string
	name  string
	app   string // image repository in Gitea's registry
	v1    string
}

func newCLIRepo(t *testing.T) *cliRepo {
	t.Helper()
	srv := giteatest.Server(t)
	r := &cliRepo{srv: srv, owner: srv.AdminUser, name: giteatest.Name(t)}
	r.app = fmt.Sprintf("%s/%s/%s-app", srv.RegistryHost, r.owner, r.name)
	r.v1 = r.push(t, "v1")
	dir := t.TempDir()
	path := filepath.Join(dir, "deploy", "app.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("spec:\n  containers:\n    - image: "+r.app+":v1@"+r.v1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.CreateRepoFromDir(context.Background(), r.owner, r.name, "main", dir); err != nil {
		t.Fatal(err)
	}
	docker, err := srv.DockerConfig()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", docker)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // the clone cache
	return r
}

// push pushes a random image as tag and returns its digest.
func (r *cliRepo) push(t *testing.T, tag string) string {
	t.Helper()
	d, err := r.srv.PushRandomImage(r.app + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// pinbot runs the real pinbot binary with args against the repository and
// returns its exit code and output.
func (r *cliRepo) pinbot(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(pinbotBinary(t), append(args, "--forge-url", r.srv.URL, "--repo", r.owner+"/"+r.name)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running pinbot: %s", err)
	}
	return code, out.String(), errOut.String()
}
