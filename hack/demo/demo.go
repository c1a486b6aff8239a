package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
)

const (
	owner = "platform"
	repo  = "manifests"
)

// demo holds what the steps share.
type demo struct {
	dir     string // scratch space, removed on close
	pinbot  string // the pinbot binary
	gitea   *gitea.Server
	token   string // file holding the Gitea token
	images  map[string]pushed
	pr      int64
	cluster *kube.Cluster // started by mergeAndReconcile, for the Argo CD step
	node    *kubeletsim.Sim
	closers []func()

	// reconcilerConfig and kubeconfig are set once the cluster half
	// runs; the serve step reuses them.
	reconcilerConfig, kubeconfig string
	// ran is what each step left running, for the last step's serve:
	// its apps and promote entries, one YAML flow mapping each.
	ran struct{ apps, promote []string }
}

func newDemo(ctx context.Context) (*demo, error) {
	d := &demo{images: map[string]pushed{}}
	dir, err := os.MkdirTemp("", "pinbot-demo-")
	if err != nil {
		return d, err
	}
	d.dir = dir
	d.closers = append(d.closers, func() { _ = os.RemoveAll(dir) })

	bin, err := gitea.BinDir()
	if err != nil {
		return d, err
	}
	d.pinbot = filepath.Join(bin, "pinbot")
	if _, err := os.Stat(d.pinbot); err != nil {
		return d, fmt.Errorf("%s is missing: run `make build` (make demo does)", d.pinbot)
	}

	return d, nil
}

// startGitea starts Gitea with its container registry, once its build
// (which `make demo` runs in the background the first time) is done.
func (d *demo) startGitea(ctx context.Context) error {
	if err := waitForGitea(ctx); err != nil {
		return err
	}
	banner("Starting a local Gitea with its container registry")
	start := time.Now()
	g, err := gitea.Start(ctx, gitea.Options{})
	if err != nil {
		return err
	}
	d.gitea = g
	d.closers = append(d.closers, func() { _ = g.Stop() })
	fmt.Printf("Gitea %s at %s (registry %s), up in %s\n", g.Version, g.URL, g.RegistryHost, time.Since(start).Round(time.Millisecond))
	if err := g.CreateOrg(ctx, owner); err != nil {
		return err
	}
	d.token = filepath.Join(d.dir, "token")
	return os.WriteFile(d.token, []byte(g.Token+"\n"), 0o600)
}

func (d *demo) close() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
}

// run runs pinbot with args, echoing the command line and its output.
func (d *demo) run(ctx context.Context, args ...string) (string, error) {
	fmt.Printf("\n$ pinbot %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, d.pinbot, args...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+d.dockerConfig())
	var out strings.Builder
	cmd.Stdout = io.MultiWriter(os.Stdout, &out)
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("pinbot %s: %w", args[0], err)
	}
	return out.String(), nil
}

func (d *demo) dockerConfig() string {
	if d.gitea == nil {
		return ""
	}
	dir, err := d.gitea.DockerConfig()
	if err != nil {
		return ""
	}
	return dir
}

// forgeArgs are the flags every forge command takes.
func (d *demo) forgeArgs() []string {
	return []string{"--forge-url", d.gitea.URL, "--repo", owner + "/" + repo, "--token-file", d.token}
}

// pullDiff prints pull request n's diff as Gitea serves it to reviewers.
func (d *demo) pullDiff(ctx context.Context, n int64) error {
	url := fmt.Sprintf("%s/%s/%s/pulls/%d.diff", strings.TrimSuffix(d.gitea.URL, "/"), owner, repo, n)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "token "+d.gitea.Token)
	resp, err := d.gitea.HTTPClient().Do(req)
	if err != nil {
		return fmt.Errorf("fetching the diff of pull request %d: %w", n, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetching the diff of pull request %d: %s", n, resp.Status)
	}
	fmt.Printf("\nThe diff reviewers see on pull request #%d:\n%s", n, b)
	return nil
}

func banner(s string) {
	fmt.Printf("\n=== %s\n", s)
}
