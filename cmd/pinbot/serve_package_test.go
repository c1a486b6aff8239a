package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/testenv/stack"
)

// syncBuffer is a bytes.Buffer a child process writes to while the test
// reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServePackageEventOnFollower: Gitea's package webhook for a real
// image push reaches the follower of two `pinbot serve --leader-elect`
// replicas; the follower forwards it through the trigger ConfigMap, the
// leader promotes, and exactly one promotion pull request opens.
func TestServePackageEventOnFollower(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs bin/ peers (make tools)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	peers, err := stack.Start(ctx, stack.Options{Namespaces: []string{"pinbot-system", "web"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(peers.Stop)
	g, c, kube := peers.Gitea, peers.Cluster, peers.Kube
	dockerDir, err := g.DockerConfig()
	if err != nil {
		t.Fatal(err)
	}
	image := g.RegistryHost + "/" + g.AdminUser + "/web"
	v1, err := g.PushRandomImage(image + ":v1")
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {image: %q}\n", image+":v1@"+v1)
	if err := os.WriteFile(filepath.Join(src, "app", "web.yaml"), []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := g.CreateRepoFromDir(ctx, g.AdminUser, "manifests", "main", src); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(g.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "pinbot.yaml")
	config := fmt.Sprintf(`interval: 10m
forge: {url: %q, tokenFile: %q}
apps:
  - {name: web, repo: %s, branch: main, path: app, namespace: web, allowNamespaces: [web], syncPolicy: {automated: true}}
promote:
  - repo: %s/manifests
    images: [%s]
`, g.URL, tokenFile, g.RepoURL(g.AdminUser, "manifests"), g.AdminUser, image)
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	const secret = "serve-package-s3cret"
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	type child struct {
		id, addr string
		log      *syncBuffer
	}
	start := func(id string) *child {
		ch := &child{id: id, addr: freeAddr(t), log: &syncBuffer{}}
		cmd := exec.Command(pinbotBin, "serve", "--config", cfg, "--kubeconfig", c.Kubeconfig,
			"--cache-dir", t.TempDir(), "--listen", ch.addr, "--webhook-secret-file", secretFile,
			"--leader-elect", "--id", id, "--lease-duration", "4s", "--renew-deadline", "3s", "--retry-period", "1s", "-v")
		cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+dockerDir, "XDG_CACHE_HOME="+t.TempDir(), "TMPDIR="+t.TempDir())
		cmd.Stdout, cmd.Stderr = ch.log, ch.log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-done
			if t.Failed() {
				t.Logf("log of %s:\n%s", id, ch.log.String())
			}
		})
		return ch
	}
	holder := func() string {
		l, err := kube.CoordinationV1().Leases("pinbot-system").Get(ctx, "pinbot", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	poll := func(timeout time.Duration, what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(timeout); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s (lease holder %q)", what, timeout, holder())
			}
		}
	}
	a, b := start("pkg-a"), start("pkg-b")
	byID := map[string]*child{a.id: a, b.id: b}
	poll(60*time.Second, "a leader elected", func() bool { return byID[holder()] != nil })
	leader := byID[holder()]
	follower := a
	if leader == a {
		follower = b
	}
	poll(30*time.Second, "the follower serves", func() bool { return strings.Contains(follower.log.String(), "msg=serving") })

	// The package webhook of the image's owner points at the follower.
	gc, err := g.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gc.CreateMyHook(sdk.CreateHookOption{
		Type:   sdk.HookTypeGitea,
		Config: map[string]string{"url": "http://" + follower.addr + "/webhook/gitea", "content_type": "json", "secret": secret},
		Events: []string{"package"},
		Active: true,
	}); err != nil {
		t.Fatal(err)
	}
	v2, err := g.PushRandomImage(image + ":v2")
	if err != nil {
		t.Fatal(err)
	}
	openPulls := func() []*sdk.PullRequest {
		gc, err := g.Client(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ps, _, err := gc.ListRepoPullRequests(g.AdminUser, "manifests", sdk.ListPullRequestsOptions{State: sdk.StateOpen})
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	poll(90*time.Second, "the promotion pull request of v2 opens", func() bool {
		ps := openPulls()
		return len(ps) > 0 && strings.Contains(ps[0].Body, v2)
	})
	poll(30*time.Second, "the leader logs the promotion", func() bool {
		return strings.Contains(leader.log.String(), `msg="promoted a pushed image"`)
	})
	if ps := openPulls(); len(ps) != 1 {
		t.Errorf("%d open pull requests, want 1", len(ps))
	}
	if l := leader.log.String(); !strings.Contains(l, "forwarded=true") {
		t.Errorf("the leader's promotion was not the forwarded one:\n%s", l)
	}
	if l := follower.log.String(); !strings.Contains(l, "forwarded to the leader") || strings.Contains(l, "opened") {
		t.Errorf("the follower did not forward the package event, or promoted itself:\n%s", l)
	}
	// Every replica's dashboard lists the open promotion pull request on
	// the app's page.
	pr := openPulls()[0]
	for _, ch := range []*child{leader, follower} {
		resp, err := http.Get("http://" + ch.addr + "/apps/web")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `href="`+pr.HTMLURL+`"`) {
			t.Errorf("the dashboard of %s (%s) does not link %s:\n%s", ch.id, resp.Status, pr.HTMLURL, page)
		}
	}
	trig, err := kube.CoreV1().ConfigMaps("pinbot-system").Get(ctx, "pinbot-trigger", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for k, v := range trig.Annotations {
		found = found || (strings.HasPrefix(k, "promote.pinbot.dev/") && strings.Contains(v, `"tag":"v2"`))
	}
	if !found {
		t.Errorf("the trigger ConfigMap holds no forwarded promotion of v2: %v", trig.Annotations)
	}
}
