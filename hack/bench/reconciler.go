package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/internal/testenv/stack"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/registry"
)

func init() { register("reconciler", benchReconciler) }

// recBench holds the peers every reconciler measurement runs against: a
// real control plane (etcd, kube-apiserver, kube-controller-manager), a
// real Gitea with its container registry, and the simulated node that
// pulls from that registry and reports imageIDs.
type recBench struct {
	tmp     string
	bin     string // pinbot built for this run
	cluster *kube.Cluster
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	gitea   *gitea.Server
	node    *kubeletsim.Sim
	reg     *registry.Client
	owner   string // owner of the repositories and images on Gitea
	token   string // file holding the Gitea token
	docker  string // DOCKER_CONFIG directory logging in to the registry
}

// benchReconciler measures the targets of issues 4 (reconciler) and 5
// (policies). Each figure is printed next to a baseline measured in the
// same run on the same peers.
func benchReconciler(ctx context.Context, r *report) (err error) {
	started := time.Now()
	b, done, err := startRecBench(ctx, "reconciler")
	defer done()
	if err != nil {
		return err
	}
	fmt.Printf("   control plane (%s), Gitea %s and a simulated node up in %v\n",
		b.cluster.Host, b.gitea.Version, time.Since(started).Round(100*time.Millisecond))

	if err := b.rollout(ctx, r); err != nil {
		return fmt.Errorf("merge to Verified: %w", err)
	}
	if err := b.idle(ctx, r); err != nil {
		return fmt.Errorf("idle reconciler: %w", err)
	}
	if err := b.manyObjects(ctx, r); err != nil {
		return fmt.Errorf("500 objects: %w", err)
	}
	if err := b.verify(ctx, r); err != nil {
		return fmt.Errorf("verification: %w", err)
	}
	return nil
}

// startRecBench makes a run's directory, builds pinbot into it while the
// peers start (start), and quiets client-go's klog, which logs watch
// restarts: the figures are the output. done stops the peers and removes
// the directory, even on error, unless $PINBOT_BENCH_KEEP is set.
func startRecBench(ctx context.Context, name string) (b *recBench, done func(), err error) {
	tmp, err := os.MkdirTemp("", "pinbot-bench-"+name+"-")
	if err != nil {
		return nil, func() {}, err
	}
	b = &recBench{tmp: tmp, bin: filepath.Join(tmp, "pinbot")}
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	built := make(chan error, 1)
	go func() { built <- buildPinbot(ctx, b.bin) }()
	stop, err := b.start(ctx)
	done = func() {
		stop()
		if os.Getenv("PINBOT_BENCH_KEEP") != "" {
			fmt.Fprintln(os.Stderr, "kept the run's directory (serve's logs):", tmp)
			return
		}
		os.RemoveAll(tmp)
	}
	return b, done, errors.Join(err, <-built)
}

// start starts Gitea, the control plane and the node (internal/testenv/
// stack). stop undoes whatever was started, even on error.
func (b *recBench) start(ctx context.Context) (func(), error) {
	st, err := stack.Start(ctx, stack.Options{Node: []kubeletsim.Option{
		kubeletsim.WithNodeName("bench-node"), kubeletsim.WithPullBackoff(time.Second),
	}, Kube: kube.Options{APIServerFlags: []string{"--profiling=true"}}}) // the fleet's API server profile
	if err != nil {
		return func() {}, err
	}
	b.cluster, b.gitea, b.node, b.kube, b.owner = st.Cluster, st.Gitea, st.Node, st.Kube, st.Gitea.AdminUser
	if b.dyn, err = dynamic.NewForConfig(st.Cluster.Config()); err != nil {
		return st.Stop, err
	}
	if b.docker, err = st.Gitea.DockerConfig(); err != nil {
		return st.Stop, err
	}
	b.token = filepath.Join(b.tmp, "token")
	if err := os.WriteFile(b.token, []byte(st.Gitea.Token+"\n"), 0o600); err != nil {
		return st.Stop, err
	}
	if b.reg, err = registry.New(registry.WithBasicAuth(st.Gitea.RegistryHost, st.Gitea.AdminUser, st.Gitea.Token)); err != nil {
		return st.Stop, err
	}
	return st.Stop, nil
}

// namespaces creates namespaces.
func (b *recBench) namespaces(ctx context.Context, names ...string) error {
	for _, n := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}
		if _, err := b.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", n, err)
		}
	}
	return nil
}

// pushImages pushes n random linux/amd64 images to
// <registry>/<owner>/<repo>:v0.. and returns their pinned references
// (repo:tag@digest), as pinbot promote writes them.
func (b *recBench) pushImages(repo string, n int) ([]string, error) {
	auth := remote.WithAuth(&authn.Basic{Username: b.gitea.AdminUser, Password: b.gitea.Token})
	var refs []string
	for i := range n {
		img, err := random.Image(512, 1)
		if err != nil {
			return nil, err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", "amd64"
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			return nil, err
		}
		tagged := fmt.Sprintf("%s/%s/%s:v%d", b.gitea.RegistryHost, b.owner, repo, i)
		ref, err := name.ParseReference(tagged)
		if err != nil {
			return nil, err
		}
		if err := remote.Write(ref, img, auth); err != nil {
			return nil, fmt.Errorf("pushing %s: %w", tagged, err)
		}
		d, err := img.Digest()
		if err != nil {
			return nil, err
		}
		refs = append(refs, tagged+"@"+d.String())
	}
	return refs, nil
}

// recApp is one app of a reconciler config: its name is also its
// repository (under app/) and its namespace.
type recApp struct {
	name      string
	automated bool
}

// config writes a reconciler config for apps and returns its path.
func (b *recBench) config(file string, interval time.Duration, apps ...recApp) (string, error) {
	var s strings.Builder
	fmt.Fprintf(&s, "interval: %s\nforge: {url: %q, tokenFile: %q}\napps:\n", interval, b.gitea.URL, b.token)
	for _, a := range apps {
		fmt.Fprintf(&s, `  - name: %s
    repo: %s
    branch: main
    path: app
    namespace: %s
    allowNamespaces: [%s]
    syncPolicy: {automated: %t}
`, a.name, b.gitea.RepoURL(b.owner, a.name), a.name, a.name, a.automated)
	}
	path := filepath.Join(b.tmp, file)
	return path, os.WriteFile(path, []byte(s.String()), 0o600)
}

// reconciler returns an in-process Reconciler for the config file, with
// its own clone cache.
func (b *recBench) reconciler(file string) (*reconciler.Reconciler, error) {
	return b.reconcilerCache(file, strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)))
}

// open writes the config file for apps and returns an in-process
// Reconciler of it (reconciler), and the file.
func (b *recBench) open(file string, interval time.Duration, apps ...recApp) (*reconciler.Reconciler, string, error) {
	path, err := b.config(file, interval, apps...)
	if err != nil {
		return nil, "", err
	}
	rc, err := b.reconciler(path)
	return rc, path, err
}

// reconcilerCache is reconciler with the clone cache called cache, which
// Reconcilers used one after the other may share.
func (b *recBench) reconcilerCache(file, cache string) (*reconciler.Reconciler, error) {
	cfg, err := config.Load(file)
	if err != nil {
		return nil, err
	}
	return reconciler.New(cfg, b.cluster.Config(), reconciler.WithRegistry(b.reg), reconciler.WithCacheDir(filepath.Join(b.tmp, "cache-"+cache)))
}

// push replaces the main branch of repository repo with one commit of
// files (paths relative to the repository root) and returns its SHA.
func (b *recBench) push(ctx context.Context, repo string, files map[string]string) (string, error) {
	dir, err := os.MkdirTemp(b.tmp, "tree-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	for n, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return "", err
		}
	}
	return b.gitea.PushDir(ctx, b.owner, repo, "main", dir, fmt.Sprintf("%d files", len(files)))
}

// recDeployment is a Deployment "name" of replicas Pods running image,
// rolled out one surge Pod at a time without taking a ready Pod down.
func recDeployment(name string, replicas int, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
spec:
  replicas: %d
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 0, maxSurge: 1}
  selector:
    matchLabels: {app: %s}
  template:
    metadata:
      labels: {app: %s}
    spec:
      containers:
        - name: app
          image: %s
          ports: [{containerPort: 8080}]
`, name, replicas, name, name, image)
}

// recConfigMap is a small ConfigMap.
func recConfigMap(name string, i int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  LOG_LEVEL: info\n  INDEX: %q\n", name, fmt.Sprint(i))
}

func recMedian(ts []time.Duration) time.Duration {
	s := slices.Clone(ts)
	slices.Sort(s)
	return s[len(s)/2]
}

func recRound(d time.Duration) time.Duration {
	switch {
	case d > 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d > 10*time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}

// recDurations formats ts rounded, in run order.
func recDurations(ts []time.Duration) string {
	var s []string
	for _, t := range ts {
		s = append(s, recRound(t).String())
	}
	return strings.Join(s, " ")
}
