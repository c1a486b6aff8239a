package promote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/cmd/pinbot/cli"
	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
)

// These tests run `pinbot promote` and `pinbot drift` as a user would,
// against the package's Gitea (started by TestMain in package promote).

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
	write(t, filepath.Join(dir, "deploy", "app.yaml"), "spec:\n  containers:\n    - image: "+r.app+":v1@"+r.v1+"\n")
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

func (r *cliRepo) push(t *testing.T, tag string) string {
	t.Helper()
	img, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(r.app+":"+tag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: r.srv.AdminUser, Password: r.srv.Token})); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return d.String()
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (r *cliRepo) pinbot(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	args = append(args, "--forge-url", r.srv.URL, "--repo", r.owner+"/"+r.name)
	code = cli.Execute(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCLIPromote(t *testing.T) {
	r := newCLIRepo(t)
	t.Setenv("PINBOT_GITEA_TOKEN", r.srv.Token)
	v2 := r.push(t, "v2")
	digestFile := filepath.Join(t.TempDir(), "digest")
	write(t, digestFile, v2+"\n") // as Kaniko --digest-file writes it

	code, stdout, stderr := r.pinbot(t, "promote", "--digest-file", digestFile, "--image", r.app+":v2", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		PRNumber int64  `json:"pr_number"`
		PRURL    string `json:"pr_url"`
		Branch   string `json:"branch"`
		Digest   string `json:"digest"`
		Image    string `json:"image"`
		Status   string `json:"status"`
		Changes  []struct {
			File      string `json:"file"`
			Line      int    `json:"line"`
			Kind      string `json:"kind"`
			Image     string `json:"image"`
			OldDigest string `json:"old_digest"`
			NewDigest string `json:"new_digest"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("output is not one JSON object: %s\n%s", err, stdout)
	}
	if got.PRNumber == 0 || !strings.HasPrefix(got.PRURL, r.srv.URL+"/") || got.Digest != v2 || got.Image != r.app || got.Status != "opened" ||
		!strings.HasPrefix(got.Branch, "pinbot/default/") || len(got.Changes) != 1 {
		t.Fatalf("output = %s", stdout)
	}
	c := got.Changes[0]
	if c.File != "deploy/app.yaml" || c.Line != 3 || c.Kind != "manifest" || c.Image != r.app || c.OldDigest != r.v1 || c.NewDigest != v2 {
		t.Errorf("change = %+v", c)
	}

	// Text output is the pull request URL; running again changes nothing.
	code, stdout, stderr = r.pinbot(t, "promote", "--digest-file", digestFile, "--image", r.app+":v2")
	if code != 0 || stdout != got.PRURL+"\n" {
		t.Errorf("second run: exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "status=unchanged") {
		t.Errorf("second run did not report unchanged: %s", stderr)
	}
}

func TestCLIInvalidToken(t *testing.T) {
	r := newCLIRepo(t)
	v2 := r.push(t, "v2")
	const bogus = "6f0c9a7e2b41d8853a1e0c7d92b5f3a4e8c1d0b7"
	tokenFile := filepath.Join(t.TempDir(), "token")
	write(t, tokenFile, bogus+"\n")

	tests := []struct {
		name string
		args []string
		env  bool
	}{
		{name: "token file, default branch from the API", args: []string{"--token-file", tokenFile}},
		{name: "token file, clone first", args: []string{"--token-file", tokenFile, "--base", "main"}},
		{name: "environment", env: true, args: []string{"--base", "main", "-v"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env {
				t.Setenv("PINBOT_GITEA_TOKEN", bogus)
			}
			args := append([]string{"promote", "--image", r.app, "--digest", v2}, tc.args...)
			code, stdout, stderr := r.pinbot(t, args...)
			t.Logf("exit %d, stderr: %s", code, stderr)
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if !strings.Contains(stderr, "401") && !strings.Contains(stderr, "rejected the token") && !strings.Contains(stderr, "authentication") {
				t.Errorf("stderr does not say the token was rejected: %s", stderr)
			}
			if strings.Contains(stdout+stderr, bogus) {
				t.Errorf("the token appears in the output:\nstdout: %s\nstderr: %s", stdout, stderr)
			}
		})
	}
}

func TestCLIDrift(t *testing.T) {
	r := newCLIRepo(t)
	t.Setenv("PINBOT_GITEA_TOKEN", r.srv.Token)
	code, stdout, stderr := r.pinbot(t, "drift")
	if code != 0 || !strings.Contains(stdout, "checked 1 tag, 0 moved") {
		t.Fatalf("unmoved: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	r.push(t, "v1") // the tracked tag moves
	code, stdout, stderr = r.pinbot(t, "drift")
	if code != 0 || !strings.Contains(stdout, "1 moved") || !strings.Contains(stdout, "1 opened") {
		t.Fatalf("moved: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	t.Log(stdout)
}
