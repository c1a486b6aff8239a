package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/testenv/filetree"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/internal/testenv/stack"
	"pinbot.dev/pinbot/reconciler/history"
)

// serveRig is what every test of `pinbot serve` processes sets up: the
// peers (Gitea with its registry, a control plane with the simulated node),
// a manifest repository, serve's config and webhook secret, and replicas
// of the real binary.
type serveRig struct {
	t      *testing.T
	ctx    context.Context
	peers  *stack.Stack
	docker string // DOCKER_CONFIG with the registry's credentials
	dir    string
	cfg    string // serve's config file
	secret string // the webhook secret's file
	commit string // the manifest repository's first commit
}

// newServeRig starts the peers with opts and creates the repository
// "manifests" from files (path to content), with webhook secret
// secretValue.
func newServeRig(ctx context.Context, t *testing.T, opts stack.Options, files map[string]string, secretValue string) *serveRig {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs bin/ peers (make tools)")
	}
	peers, err := stack.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(peers.Stop)
	r := &serveRig{t: t, ctx: ctx, peers: peers, dir: t.TempDir()}
	if r.docker, err = peers.Gitea.DockerConfig(); err != nil {
		t.Fatal(err)
	}
	if files != nil {
		r.commit = r.createRepo("manifests", files)
	}
	r.secret = r.write("secret", secretValue+"\n")
	return r
}

// image pushes a random image as name:tag to Gitea's registry and
// returns its repository and digest.
func (r *serveRig) image(name, tag string) (repo, digest string) {
	r.t.Helper()
	g := r.peers.Gitea
	repo = g.RegistryHost + "/" + g.AdminUser + "/" + name
	digest, err := g.PushRandomImage(repo + ":" + tag)
	if err != nil {
		r.t.Fatal(err)
	}
	return repo, digest
}

// createRepo creates the repository name from files and returns its
// commit.
func (r *serveRig) createRepo(name string, files map[string]string) string {
	r.t.Helper()
	g := r.peers.Gitea
	commit, err := g.CreateRepoFromDir(r.ctx, g.AdminUser, name, "main", filetree.Write(r.t, files))
	if err != nil {
		r.t.Fatal(err)
	}
	return commit
}

// write writes a file of the rig's and returns its path.
func (r *serveRig) write(name, body string) string {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// config writes serve's config: the forge, one automated app web on the
// repository's app directory, and extra (more top-level sections).
func (r *serveRig) config(forge, extra string) {
	g := r.peers.Gitea
	r.cfg = r.write("pinbot.yaml", fmt.Sprintf(`interval: 10m
forge: %s
apps:
  - {name: web, repo: %s, branch: main, path: app, namespace: web, allowNamespaces: [web], syncPolicy: {automated: true}}
%s`, forge, g.RepoURL(g.AdminUser, "manifests"), extra))
}

// replica is one `pinbot serve --leader-elect` process of a rig.
type replica struct {
	id   string
	addr string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan error
}

// serve starts replica id with leader election on test timings (lease
// 4s/3s/1s) and args. It is killed when the test ends, and its log
// printed if the test failed.
func (r *serveRig) serve(id string, args ...string) *replica {
	r.t.Helper()
	return r.serveAt(id, freeAddr(r.t), args...)
}

// serveAt is serve listening on addr, known before it starts (an
// OpenID Provider's redirect URI names it).
func (r *serveRig) serveAt(id, addr string, args ...string) *replica {
	r.t.Helper()
	rep := &replica{id: id, addr: addr, log: &syncBuffer{}, done: make(chan error, 1)}
	rep.cmd = exec.Command(pinbotBin, append([]string{"serve", "--config", r.cfg, "--kubeconfig", r.peers.Cluster.Kubeconfig,
		"--cache-dir", r.t.TempDir(), "--listen", rep.addr, "--webhook-secret-file", r.secret,
		"--leader-elect", "--id", id, "--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "1s"}, args...)...)
	rep.cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+r.docker, "PINBOT_GITEA_TOKEN="+r.peers.Gitea.Token,
		"XDG_CACHE_HOME="+r.t.TempDir(), "TMPDIR="+r.t.TempDir())
	rep.cmd.Stdout, rep.cmd.Stderr = rep.log, rep.log
	if err := rep.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	go func() { rep.done <- rep.cmd.Wait() }()
	r.t.Cleanup(func() {
		if rep.cmd.ProcessState == nil {
			_ = rep.cmd.Process.Kill()
			<-rep.done
		}
		if r.t.Failed() {
			r.t.Logf("log of %s:\n%s", id, rep.log.String())
		}
	})
	return rep
}

// waitFor polls cond until it holds or timeout passes, reporting the
// Lease's holder and app web's history when it fails, and returns how
// long it waited.
func (r *serveRig) waitFor(timeout time.Duration, what string, cond func() bool) time.Duration {
	r.t.Helper()
	begin := time.Now()
	poll.Until(r.t, timeout, what, func() (bool, string) {
		return cond(), fmt.Sprintf("lease holder %q, history %+v", r.holder(), r.entries())
	})
	return time.Since(begin)
}

// holder is the Lease's holder, "" when none.
func (r *serveRig) holder() string {
	l, err := r.peers.Kube.CoordinationV1().Leases("pinbot-system").Get(r.ctx, "pinbot", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// entries is app web's history, newest first.
func (r *serveRig) entries() []history.Entry {
	cm, err := r.peers.Kube.CoreV1().ConfigMaps("pinbot-system").Get(r.ctx, "pinbot-app-web", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	var es []history.Entry
	_ = json.Unmarshal([]byte(cm.Data["history.json"]), &es)
	return es
}

// syncBuffer is a bytes.Buffer safe for a child's output and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}

// newWaveRig is the rig of the shutdown tests: the repository's app holds
// a Job in wave -1, which runs for jobRun on the simulated node, and a
// ConfigMap applied after it.
func newWaveRig(ctx context.Context, t *testing.T, jobRun time.Duration) *serveRig {
	t.Helper()
	r := newServeRig(ctx, t, stack.Options{Namespaces: []string{"pinbot-system", "web"},
		Node: []kubeletsim.Option{kubeletsim.WithRunDuration(jobRun)}}, nil, "s3cret")
	repo, digest := r.image("migrate", "v1")
	r.commit = r.createRepo("manifests", map[string]string{
		"app/job.yaml": fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: migrate, annotations: {pinbot.dev/sync-wave: "-1"}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: migrate, image: %q}]
`, repo+":v1@"+digest),
		"app/late.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: late}\ndata: {k: v}\n",
	})
	r.config(fmt.Sprintf("{url: %q}", r.peers.Gitea.URL), "")
	return r
}
