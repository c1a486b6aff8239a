package reconciler_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/images"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/internal/testenv/stack"
	"pinbot.dev/pinbot/registry"
)

// The peers every scenario shares: one control plane, one Gitea (Git,
// API and the container registry the images live in) and one simulated
// linux/amd64 node. Each test uses its own namespace, repository and app.
// Tests run one at a time: they set hooks on the shared node.
var (
	env     *peers
	envErr  error
	testCtx context.Context
)

type peers struct {
	cluster *kube.Cluster
	kube    kubernetes.Interface
	gitea   *gitea.Server
	forge   *gitforge.Gitea
	node    *kubeletsim.Sim
	reg     *registry.Client
	token   string // file holding the Gitea token
}

// org owns the test repositories and images on Gitea.
const org = "team"

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if testing.Short() {
		return m.Run()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	level := slog.LevelWarn
	if os.Getenv("PINBOT_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	testCtx = logctx.Into(ctx, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	p, stop, err := startPeers(testCtx)
	defer stop()
	if err != nil {
		envErr = err
		fmt.Fprintf(os.Stderr, "starting the peers: %s\n", err.Error())
	}
	env = p
	return m.Run()
}

// startPeers starts the control plane, Gitea and the node. stop undoes
// whatever was started, even on error.
func startPeers(ctx context.Context) (*peers, func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	st, err := stack.Start(ctx, stack.Options{Node: []kubeletsim.Option{
		kubeletsim.WithNodeName("sim-amd64"), kubeletsim.WithPullBackoff(time.Second),
	}})
	if err != nil {
		return nil, stop, err
	}
	stops = append(stops, st.Stop)
	g := st.Gitea
	p := &peers{cluster: st.Cluster, gitea: g, kube: st.Kube, node: st.Node}
	if err := g.CreateOrg(ctx, org); err != nil {
		return nil, stop, err
	}
	dir, err := os.MkdirTemp("", "pinbot-reconciler-test-")
	if err != nil {
		return nil, stop, err
	}
	stops = append(stops, func() { _ = os.RemoveAll(dir) })
	p.token = filepath.Join(dir, "token")
	if err := os.WriteFile(p.token, []byte(g.Token+"\n"), 0o600); err != nil {
		return nil, stop, err
	}
	if p.forge, err = gitforge.NewGitea(g.URL, g.Token); err != nil {
		return nil, stop, err
	}
	if p.reg, err = registry.New(registry.WithBasicAuth(g.RegistryHost, g.AdminUser, g.Token)); err != nil {
		return nil, stop, err
	}
	return p, stop, nil
}

// needPeers skips under -short and fails loudly when the peers could not
// start.
func needPeers(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped under testing.Short: scenario test, needs bin/ peers (make tools)")
	}
	if envErr != nil {
		t.Fatalf("peers did not start: %s", envErr)
	}
}

// image is one pushed image or index.
type image struct {
	repo     string            // host/org/name
	digest   string            // manifest or index digest
	children map[string]string // index: arch -> platform manifest digest
	configs  map[string]string // arch -> config digest ("" key for a single manifest)
}

func (i image) ref() string { return i.repo + "@" + i.digest }

func (p *peers) auth() remote.Option {
	return remote.WithAuth(&authn.Basic{Username: p.gitea.AdminUser, Password: p.gitea.Token})
}

// pushImage pushes a random single-platform linux/amd64 image to
// <registry>/team/<name>:<tag>.
func pushImage(t *testing.T, name_, tag string) image {
	t.Helper()
	needPeers(t)
	img, err := images.Random(images.OnPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}))
	if err != nil {
		t.Fatal(err)
	}
	repo := env.gitea.RegistryHost + "/" + org + "/" + name_
	p, err := images.Push(repo+":"+tag, img, env.auth())
	if err != nil {
		t.Fatal(err)
	}
	return image{repo: repo, digest: p.Digest, configs: map[string]string{"": p.Config}}
}

// pushIndex pushes an index of linux/amd64 and linux/arm64/v8 images plus
// an attestation manifest to <registry>/team/<name>:<tag>.
func pushIndex(t *testing.T, name_, tag string) image {
	t.Helper()
	needPeers(t)
	repo := env.gitea.RegistryHost + "/" + org + "/" + name_
	idx, err := env.gitea.PushRandomIndex(repo + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	return image{repo: repo, digest: idx.Digest, children: idx.Children, configs: idx.Configs}
}

// indent prefixes each line of s, for multi-line failure messages.
func indent(s string) string { return "  " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n  ") }
