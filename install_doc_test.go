package pinbot_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	giteaenv "pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/internal/testenv/snippets"
)

// TestDocsRunAsPasted runs the command blocks of docs/install.md, the
// README's install block, and ci.md's Jenkins step and Gitea Actions
// promote step as a platform team pastes them, with only the example
// host gitea.example filled in: against a real Gitea over TLS with a
// private CA (its container registry, an organisation "platform" and its
// manifest repository), real control planes whose simulated nodes pull
// the released images, and the real make, cosign, helm and kubectl. The
// reader works in a clone of this repository holding her own files: the
// token, the CA, the cosign key pair and my-values.yaml. Every sh block of
// those files is run, or says why not in a "not run:" comment.
func TestDocsRunAsPasted(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: builds a release and runs Gitea and three control planes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	srv := giteatest.Start(t, giteaenv.Options{TLS: true})
	host := strings.TrimPrefix(srv.URL, "https://")
	if srv.RegistryHost != host {
		t.Fatalf("Gitea's registry %s is not at its URL's host %s", srv.RegistryHost, host)
	}
	if err := srv.CreateOrg(ctx, "platform"); err != nil {
		t.Fatal(err)
	}
	old, err := srv.PushRandomImage(host + "/platform/web:old")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.CreateRepoWith(ctx, "platform", "manifests", "main", map[string]string{
		"envs/prod/web.yaml": webDeployment(host + "/platform/web@" + old),
	}); err != nil {
		t.Fatal(err)
	}

	u := newReader(t, ctx, srv, host)
	docs := map[string][]snippets.Block{}
	for _, f := range []string{"docs/install.md", "README.md", "docs/ci.md"} {
		blocks, err := snippets.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = blocks
	}
	ran := map[string]bool{}
	pick := func(file, contains string) snippets.Block {
		t.Helper()
		for _, b := range snippets.Lang(docs[file], "sh") {
			if strings.Contains(b.Text, contains) && b.NotRun == "" {
				ran[b.String()] = true
				return b
			}
		}
		t.Fatalf("%s has no sh block with %q to run", file, contains)
		return snippets.Block{}
	}

	// 0. The release, from the clone, into Gitea's registry. She releases
	// from the commit that dates the CHANGELOG's heading.
	u.releaseCommit()
	u.run(ctx, pick("docs/install.md", "make release"), nil)
	u.installRelease()

	// 1 and 2a. The Secrets, then the chart, on a cluster of its own.
	helmCluster := u.cluster(ctx, "web")
	u.run(ctx, pick("docs/install.md", "create secret generic pinbot-gitea"), helmCluster)
	out := u.run(ctx, pick("docs/install.md", "helm install"), helmCluster)
	if !regexp.MustCompile(`(?m)^web\b`).MatchString(out) {
		t.Errorf("pinbot status printed no line for the app web:\n%s", out)
	}

	// The README's install block, on another cluster. The reader's machine
	// trusts the private CA there, as the README's short path assumes.
	readme := u.cluster(ctx, "web")
	readme.env = append(readme.env, "SSL_CERT_FILE="+u.file("ca.pem"))
	if out := u.run(ctx, pick("README.md", "helm install"), readme); !strings.Contains(out, "web") {
		t.Errorf("the README's pinbot status printed no app web:\n%s", out)
	}

	// 1 and 2b. The Secrets, then the kustomize overlay, on a third.
	kustomize := u.cluster(ctx)
	u.run(ctx, pick("docs/install.md", "create secret generic pinbot-gitea"), kustomize)
	u.run(ctx, pick("docs/install.md", "cp -r deploy/overlays/example"), nil)
	u.editOverlay()
	u.run(ctx, pick("docs/install.md", "kubectl apply -k"), kustomize)

	// Build pinbot's image, after setting the base's newName to her
	// repository, as the docs ask. make image takes the private CA as any
	// Go program does.
	u.edit("deploy/base/kustomization.yaml", "newName: gitea.example/", "newName: "+host+"/")
	img := u.run(ctx, pick("docs/install.md", "make image"), &userCluster{env: []string{"SSL_CERT_FILE=" + u.file("ca.pem")}})
	if !strings.Contains(img, host+"/platform/pinbot@sha256:") {
		t.Errorf("make image printed %q, want %s/platform/pinbot@sha256:…", img, host)
	}

	// ci.md: the Jenkins step, then the Gitea Actions promote step.
	u.ciSteps(ctx, docs["docs/ci.md"], ran)

	pick("README.md", "make demo") // TestDemoAsPasted runs it
	for _, f := range []string{"docs/install.md", "README.md"} {
		for _, b := range snippets.Lang(docs[f], "sh") {
			if b.NotRun == "" && !ran[b.String()] {
				t.Errorf("%s is meant to run (it says no reason not to), and no test ran it", b)
			}
		}
	}
}

// reader is the platform engineer at her terminal: a clone of this
// repository with her files, her PATH, HOME and docker login.
type reader struct {
	t     *testing.T
	srv   *giteaenv.Server
	host  string
	clone string
	home  string
	path  string // her PATH: the release's pinbot first, then the peers
}

// userCluster is a control plane with a simulated node, and the
// environment that points kubectl, helm and pinbot at it.
type userCluster struct {
	env []string
}

func newReader(t *testing.T, ctx context.Context, srv *giteaenv.Server, host string) *reader {
	t.Helper()
	bin, err := giteaenv.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"kubectl", "cosign", "argocd-path/helm"} {
		if _, err := os.Stat(filepath.Join(bin, tool)); err != nil {
			t.Fatalf("the docs' blocks run the real %s (make tools): %s", tool, err)
		}
	}
	u := &reader{t: t, srv: srv, host: host, clone: userClone(t), home: t.TempDir()}
	u.path = strings.Join([]string{filepath.Join(u.home, "bin"), bin, filepath.Join(bin, "argocd-path"), os.Getenv("PATH")}, string(os.PathListSeparator))
	docker, err := srv.DockerConfig()
	if err != nil {
		t.Fatal(err)
	}
	login, err := os.ReadFile(filepath.Join(docker, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	u.write(filepath.Join(u.home, ".docker", "config.json"), string(login))
	ca, err := os.ReadFile(srv.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	u.write(u.file("ca.pem"), string(ca))
	u.write(u.file("token"), srv.Token)
	u.write(u.file("my-values.yaml"), `config:
  inline:
    interval: 60s
    forge: {url: https://`+host+`, tokenFile: /etc/pinbot/token/token}
    apps:
      - name: web
        repo: https://`+host+`/platform/manifests.git
        branch: main
        path: envs/prod
        namespace: web
        allowNamespaces: [web]
appNamespaces: [web]
extraCACerts: {configMap: pinbot-ca}
`)
	cosign := exec.CommandContext(ctx, filepath.Join(bin, "cosign"), "generate-key-pair")
	cosign.Dir, cosign.Env = u.clone, u.env(nil)
	if out, err := cosign.CombinedOutput(); err != nil {
		t.Fatalf("cosign generate-key-pair: %s\n%s", err, out)
	}
	return u
}

// edit replaces old with new in the clone's file rel, which must hold it.
func (u *reader) edit(rel, old, new string) {
	u.t.Helper()
	p := filepath.Join(u.clone, filepath.FromSlash(rel))
	data, err := os.ReadFile(p)
	if err != nil || !strings.Contains(string(data), old) {
		u.t.Fatalf("%s holds no %q (%v)", rel, old, err)
	}
	u.write(p, strings.Replace(string(data), old, new, 1))
}

// releaseCommit dates the CHANGELOG's heading of VERSION in the clone and
// commits it, as the release commit does, unless it is dated already.
func (u *reader) releaseCommit() {
	u.t.Helper()
	version := strings.TrimSpace(string(read(u.t, "VERSION")))
	data, err := os.ReadFile(u.file("CHANGELOG.md"))
	if err != nil {
		u.t.Fatal(err)
	}
	unreleased := "## " + version + " (unreleased)"
	if !strings.Contains(string(data), unreleased) {
		return
	}
	u.edit("CHANGELOG.md", unreleased, "## "+version+" ("+time.Now().UTC().Format(time.DateOnly)+")")
	commit := exec.Command("git", "-c", "user.name=reader", "-c", "user.email=reader@example.com", "commit", "-qam", "release "+version)
	commit.Dir = u.clone
	if out, err := commit.CombinedOutput(); err != nil {
		u.t.Fatalf("committing the release: %s\n%s", err, out)
	}
}

// file is the path of her file name in the clone, where she works.
func (u *reader) file(name string) string { return filepath.Join(u.clone, name) }

func (u *reader) write(path, content string) {
	u.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		u.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		u.t.Fatal(err)
	}
}

// env is her environment: this process's, with her HOME and PATH, the
// release narrowed to this machine's platform, and extra.
func (u *reader) env(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "PATH", "KUBECONFIG", "DOCKER_CONFIG", "SSL_CERT_FILE", "SSL_CERT_DIR", "MAKEFLAGS", "MAKELEVEL", "MFLAGS", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "GOFLAGS":
			continue
		}
		env = append(env, kv)
	}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH"} {
		if v, err := exec.Command("go", "env", k).Output(); err == nil { // her Go caches stay where they are
			env = append(env, k+"="+strings.TrimSpace(string(v)))
		}
	}
	env = append(env, "HOME="+u.home, "PATH="+u.path, "COSIGN_PASSWORD=docs-key", "PLATFORMS=linux/amd64", "GOTOOLCHAIN=local", trimpath())
	return append(env, extra...)
}

// trimpath is GOFLAGS with -trimpath added: the clone's builds then share
// the build cache with this tree's, instead of compiling every package of
// the module again under the clone's path (and filling the disk with it).
func trimpath() string { return "GOFLAGS=" + strings.TrimSpace(os.Getenv("GOFLAGS")+" -trimpath") }

// run runs block with gitea.example filled in, in the clone, on c (nil:
// no cluster), and returns its standard output.
func (u *reader) run(ctx context.Context, b snippets.Block, c *userCluster) string {
	u.t.Helper()
	var extra []string
	if c != nil {
		extra = c.env
	}
	script := strings.ReplaceAll(b.Text, "gitea.example", u.host)
	out, err := snippets.Shell(ctx, u.clone, u.env(extra), script)
	if err != nil {
		u.t.Fatalf("%s, as pasted: %s", b, err)
	}
	return out
}

// installRelease puts the release's linux/amd64 pinbot on her PATH, as
// the archive make release wrote it, and notes the image's digest.
func (u *reader) installRelease() {
	u.t.Helper()
	version := strings.TrimSpace(string(read(u.t, "VERSION")))
	dist := filepath.Join(u.clone, "dist", version)
	archive := filepath.Join(dist, "pinbot_"+version+"_linux_amd64.tar.gz")
	dir := filepath.Join(u.home, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		u.t.Fatal(err)
	}
	tar := exec.Command("tar", "-xzf", archive, "--strip-components=1", "-C", dir, "pinbot_"+version+"_linux_amd64/pinbot")
	if out, err := tar.CombinedOutput(); err != nil {
		u.t.Fatalf("the release's archive %s: %s\n%s", archive, err, out)
	}
}

// cluster starts a control plane with one simulated node that pulls from
// Gitea's registry with the private CA, and creates the app namespaces
// the reader's own apps live in.
func (u *reader) cluster(ctx context.Context, namespaces ...string) *userCluster {
	u.t.Helper()
	cluster, err := kube.Start(ctx, kube.Options{})
	if err != nil {
		u.t.Fatal(err)
	}
	u.t.Cleanup(func() { cluster.Stop() })
	tr := u.srv.HTTPClient().Transport
	node := kubeletsim.New(cluster.Config(), kubeletsim.WithNodeName("node-1"),
		kubeletsim.WithBasicAuth(u.host, u.srv.AdminUser, u.srv.Token), kubeletsim.WithTransport(tr))
	if err := node.Start(ctx); err != nil {
		u.t.Fatal(err)
	}
	u.t.Cleanup(node.Stop)
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	for _, ns := range namespaces {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			u.t.Fatal(err)
		}
	}
	return &userCluster{env: []string{"KUBECONFIG=" + cluster.Kubeconfig}}
}

// editOverlay is her edit of deploy/overlays/mine: her config, and the
// release's image by the digest make release pushed under pinbot:VERSION.
func (u *reader) editOverlay() {
	u.t.Helper()
	version := strings.TrimSpace(string(read(u.t, "VERSION")))
	mine := filepath.Join(u.clone, "deploy", "overlays", "mine")
	u.write(filepath.Join(mine, "reconciler.yaml"), `interval: 60s
forge: {url: https://`+u.host+`, tokenFile: /etc/pinbot/token/token}
apps:
  - name: web
    repo: https://`+u.host+`/platform/manifests.git
    branch: main
    path: envs/prod
    namespace: web
    allowNamespaces: [web]
`)
	digest := u.digest(u.host + "/platform/pinbot:" + version)
	k := filepath.Join(mine, "kustomization.yaml")
	data, err := os.ReadFile(k)
	if err != nil {
		u.t.Fatal(err)
	}
	u.write(k, string(data)+`images:
  - name: gitea.example/platform/pinbot
    newName: `+u.host+`/platform/pinbot
    digest: `+digest+"\n")
}

// digest is the digest ref names in Gitea's registry.
func (u *reader) digest(ref string) string {
	u.t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		u.t.Fatal(err)
	}
	tr := u.srv.HTTPClient().Transport
	desc, err := remote.Head(r, remote.WithTransport(tr), remote.WithAuth(&authn.Basic{Username: u.srv.AdminUser, Password: u.srv.Token}))
	if err != nil {
		u.t.Fatalf("%s: %s", ref, err)
	}
	return desc.Digest.String()
}

// userClone copies this repository's tracked and untracked-but-not-ignored
// files into a new git repository: the clone a reader runs make in, with
// an origin, as a clone has.
func userClone(t *testing.T) string {
	t.Helper()
	list, err := exec.Command("git", "ls-files", "-co", "--exclude-standard", "-z").Output()
	if err != nil {
		t.Fatalf("listing the source tree: %s", err)
	}
	dir := filepath.Join(t.TempDir(), "pinbot")
	for _, f := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		src, err := os.Lstat(f)
		if err != nil || !src.Mode().IsRegular() {
			continue // deleted in the work tree, or a link
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, src.Mode().Perm()|fs.FileMode(0o200)); err != nil {
			t.Fatal(err)
		}
		// As old as the source's: make finds the peers in bin/, built
		// after it, up to date.
		if err := os.Chtimes(dst, src.ModTime(), src.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "-A"},
		{"-c", "user.name=reader", "-c", "user.email=reader@example.com", "commit", "-q", "-m", "the source under test"},
		{"remote", "add", "origin", "https://gitea.example/platform/pinbot.git"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %s\n%s", strings.Join(args, " "), err, out)
		}
	}
	return dir
}

func webDeployment(image string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: ` + image + "\n"
}
