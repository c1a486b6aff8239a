package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/internal/testenv/stack"
)

// waveRig is the setup of the shutdown tests: the peers, a manifest
// repository whose app holds a Job in wave -1, which runs for jobRun on the
// simulated node, and a ConfigMap applied after it, and serve's config
// (one automated app, web) and webhook secret.
type waveRig struct {
	peers                     *stack.Stack
	commit                    string // the repository's only commit
	cfg, secret, dockerConfig string
}

func newWaveRig(ctx context.Context, t *testing.T, jobRun time.Duration) *waveRig {
	t.Helper()
	peers, err := stack.Start(ctx, stack.Options{Namespaces: []string{"pinbot-system", "web"},
		Node: []kubeletsim.Option{kubeletsim.WithRunDuration(jobRun)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(peers.Stop)
	g := peers.Gitea
	w := &waveRig{peers: peers}
	if w.dockerConfig, err = g.DockerConfig(); err != nil {
		t.Fatal(err)
	}
	repo := g.RegistryHost + "/" + g.AdminUser + "/migrate"
	digest, err := g.PushRandomImage(repo + ":v1")
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	job := fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: migrate, annotations: {pinbot.dev/sync-wave: "-1"}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: %q}]
`, repo+":v1@"+digest)
	late := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: late}\ndata: {k: v}\n"
	for f, body := range map[string]string{"app/job.yaml": job, "app/late.yaml": late} {
		if err := os.WriteFile(filepath.Join(src, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if w.commit, err = g.CreateRepoFromDir(ctx, g.AdminUser, "manifests", "main", src); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	w.cfg = filepath.Join(dir, "pinbot.yaml")
	config := fmt.Sprintf(`interval: 10m
forge: {url: %q}
apps:
  - {name: web, repo: %s, branch: main, path: app, namespace: web, allowNamespaces: [web], syncPolicy: {automated: true}}
`, g.URL, g.RepoURL(g.AdminUser, "manifests"))
	if err := os.WriteFile(w.cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	w.secret = filepath.Join(dir, "secret")
	if err := os.WriteFile(w.secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

// waveReplica is one `pinbot serve` process of a rig.
type waveReplica struct {
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan error
}

// serve starts replica id with leader election on test timings (lease
// 4s/3s/1s) and the given --shutdown-timeout. It is killed when the test
// ends, and its log printed if the test failed.
func (w *waveRig) serve(t *testing.T, id, shutdownTimeout string) *waveReplica {
	t.Helper()
	r := &waveReplica{log: &syncBuffer{}, done: make(chan error, 1)}
	r.cmd = exec.Command(pinbotBin, "serve", "--config", w.cfg, "--kubeconfig", w.peers.Cluster.Kubeconfig,
		"--cache-dir", t.TempDir(), "--listen", freeAddr(t), "--webhook-secret-file", w.secret,
		"--leader-elect", "--id", id, "--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "1s",
		"--shutdown-timeout", shutdownTimeout)
	r.cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+w.dockerConfig, "PINBOT_GITEA_TOKEN="+w.peers.Gitea.Token)
	r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			_ = r.cmd.Process.Kill()
			<-r.done
		}
		if t.Failed() {
			t.Logf("log of %s:\n%s", id, r.log.String())
		}
	})
	return r
}
