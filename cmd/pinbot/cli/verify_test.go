package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	sigsyaml "sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/internal/testenv/stack"
)

// TestVerifyReportDeployerApps runs `pinbot verify APP --report` on an
// app Argo CD deploys and one Flux deploys, each at the head of a merged
// promotion: the test plays the deployers (it applies the Deployment and
// writes their status); pinbot posts the commit status and the per-Pod
// proof on the pull request, and says in -o json who deployed what.
func TestVerifyReportDeployerApps(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs bin/ peers (make tools crds)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	peers, err := stack.Start(ctx, stack.Options{Namespaces: []string{"pinbot-system", "argocd", "flux-system", "guestbook", "podinfo"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(peers.Stop)
	g, c := peers.Gitea, peers.Cluster
	if err := c.InstallNamedCRDs(ctx, kube.ApplicationCRD, kube.KustomizationCRD, kube.GitRepositoryCRD); err != nil {
		t.Fatal(err)
	}
	dockerDir, err := g.DockerConfig()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dockerDir)
	t.Setenv("PINBOT_GITEA_TOKEN", g.Token)
	dyn := dynamic.NewForConfigOrDie(c.Config())
	forge, err := gitforge.NewGitea(g.URL, g.Token)
	if err != nil {
		t.Fatal(err)
	}

	cfg := filepath.Join(t.TempDir(), "pinbot.yaml")
	config := fmt.Sprintf(`forge: {url: %q}
apps:
  - name: guestbook
    argocd: {application: guestbook, namespace: argocd}
  - name: podinfo
    flux: {kustomization: podinfo, namespace: flux-system}
`, g.URL)
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	common := []string{"--config", cfg, "--kubeconfig", c.Kubeconfig, "--cache-dir", t.TempDir()}

	for _, app := range []string{"guestbook", "podinfo"} {
		t.Run(app, func(t *testing.T) {
			repo := gitforge.Repo{Owner: g.AdminUser, Name: app}
			image := g.RegistryHost + "/" + g.AdminUser + "/" + app
			d1, err := g.PushRandomImage(image + ":v1")
			if err != nil {
				t.Fatal(err)
			}
			d2, err := g.PushRandomImage(image + ":v2")
			if err != nil {
				t.Fatal(err)
			}
			src := t.TempDir()
			writeManifest(t, src, image+":v1@"+d1)
			if _, err := g.CreateRepoFromDir(ctx, g.AdminUser, app, "main", src); err != nil {
				t.Fatal(err)
			}
			// A promotion to v2, merged.
			if _, err := g.Commit(ctx, g.AdminUser, app, "main", "pinbot/"+app+"/web", map[string]string{"deploy/web.yaml": webDeployment(image + ":v2@" + d2)}, "Promote to v2"); err != nil {
				t.Fatal(err)
			}
			pr, err := forge.CreatePull(ctx, repo, gitforge.Pull{Head: "pinbot/" + app + "/web", Base: "main", Title: "Promote to v2", Body: "<!-- pinbot:promotion -->"})
			if err != nil {
				t.Fatal(err)
			}
			merge, err := g.MergePull(ctx, g.AdminUser, app, pr.Number)
			if err != nil {
				t.Fatal(err)
			}

			// The deployer applies the merge and says so.
			deploy := &unstructured.Unstructured{}
			if err := sigsyaml.Unmarshal([]byte(webDeployment(image+":v2@"+d2)), &deploy.Object); err != nil {
				t.Fatal(err)
			}
			deploy.SetNamespace(app)
			if _, err := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(app).
				Apply(ctx, "web", deploy, metav1.ApplyOptions{FieldManager: "deployer", Force: true}); err != nil {
				t.Fatal(err)
			}
			if app == "guestbook" {
				playArgoCD(ctx, t, dyn, g.RepoURL(g.AdminUser, app), merge)
			} else {
				playFlux(ctx, t, dyn, g.RepoURL(g.AdminUser, app), merge)
			}

			var out struct {
				App      string `json:"app"`
				Commit   string `json:"commit"`
				Verified bool   `json:"verified"`
				Source   string `json:"source"`
				Deployed string `json:"deployedCommit"`
				Head     string `json:"headCommit"`
			}
			poll.Until(t, 90*time.Second, "verify --report", func() (bool, string) {
				code, stdout, stderr := run(t, append([]string{"verify", app, "--report", "-o", "json"}, common...)...)
				if code != exitOK {
					return false, fmt.Sprintf("exit %d\n%s\n%s", code, stdout, stderr)
				}
				if err := json.Unmarshal([]byte(stdout), &out); err != nil {
					t.Fatalf("verify -o json: %s\n%s", err, stdout)
				}
				return true, ""
			})
			// -v shows what was asked of the API server.
			if code, _, stderr := run(t, append([]string{"verify", app, "-v", "-o", "json"}, common...)...); code != exitOK ||
				!strings.Contains(stderr, `msg="kube request" method=GET`) || !strings.Contains(stderr, `status="200 OK"`) {
				t.Errorf("verify -v: exit %d; want the requests to the API server on stderr:\n%s", code, stderr)
			}
			wantSource := map[string]string{"guestbook": "argocd", "podinfo": "flux"}[app]
			if out.App != app || out.Commit != merge || !out.Verified || out.Source != wantSource || out.Deployed != merge || out.Head != merge {
				t.Errorf("verify -o json = %+v, want %s verified at %s", out, wantSource, merge)
			}
			sts, err := forge.Statuses(ctx, repo, merge)
			if err != nil {
				t.Fatal(err)
			}
			if len(sts) != 1 || sts[0].Context != "pinbot/"+app || sts[0].State != "success" || !strings.Contains(sts[0].Description, "2/2 Pods run") {
				t.Errorf("commit statuses = %+v, want pinbot/%s success", sts, app)
			}
			comments, err := forge.Comments(ctx, repo, pr.Number)
			if err != nil {
				t.Fatal(err)
			}
			if len(comments) != 1 || !strings.Contains(comments[0], "**pinbot verified `"+app+"`**") {
				t.Errorf("pull request comments = %q, want the proof", comments)
			}
		})
	}
}

func writeManifest(t *testing.T, dir, image string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "deploy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "deploy", "web.yaml"), []byte(webDeployment(image)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func webDeployment(image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: %q}]
`, image)
}

// playArgoCD creates the Application guestbook and writes the status of
// its successful sync of commit (merged into the object: the CRD has no
// status subresource).
func playArgoCD(ctx context.Context, t *testing.T, dyn dynamic.Interface, repoURL, commit string) {
	t.Helper()
	apps := dyn.Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}).Namespace("argocd")
	createYAML(ctx, t, apps, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook, namespace: argocd}
spec:
  project: default
  source: {repoURL: %q, path: deploy, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: guestbook}
`, repoURL))
	now := time.Now().UTC().Format(time.RFC3339)
	patch, err := sigsyaml.YAMLToJSON([]byte(fmt.Sprintf(`
status:
  reconciledAt: %q
  operationState: {operation: {sync: {revision: %s}}, phase: Succeeded, startedAt: %q, finishedAt: %q, syncResult: {revision: %s}}
  history: [{id: 0, revision: %s, deployedAt: %q}]
  health: {status: Healthy}
  sync: {status: Synced, revision: %s}
  resources: [{group: apps, version: v1, kind: Deployment, namespace: guestbook, name: web}]
`, now, commit, now, now, commit, commit, now, commit)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apps.Patch(ctx, "guestbook", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// playFlux creates the GitRepository and Kustomization podinfo and writes
// the status of its apply of commit.
func playFlux(ctx context.Context, t *testing.T, dyn dynamic.Interface, repoURL, commit string) {
	t.Helper()
	repos := dyn.Resource(schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}).Namespace("flux-system")
	createYAML(ctx, t, repos, fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: podinfo, namespace: flux-system}
spec: {interval: 1m, url: %q, ref: {branch: main}}
`, repoURL))
	kss := dyn.Resource(schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}).Namespace("flux-system")
	ks := createYAML(ctx, t, kss, `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: podinfo, namespace: flux-system}
spec: {interval: 10m, prune: true, path: ./deploy, targetNamespace: podinfo, sourceRef: {kind: GitRepository, name: podinfo}}
`)
	status := map[string]any{}
	if err := sigsyaml.Unmarshal([]byte(fmt.Sprintf(`
observedGeneration: %d
lastAppliedRevision: main@sha1:%s
inventory: {entries: [{id: podinfo_web_apps_Deployment, v: v1}]}
conditions:
- {type: Ready, status: "True", reason: ReconciliationSucceeded, message: applied, lastTransitionTime: %q, observedGeneration: %d}
`, ks.GetGeneration(), commit, time.Now().UTC().Format(time.RFC3339), ks.GetGeneration())), &status); err != nil {
		t.Fatal(err)
	}
	ks.Object["status"] = status
	if _, err := kss.UpdateStatus(ctx, ks, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createYAML(ctx context.Context, t *testing.T, ri dynamic.ResourceInterface, y string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	out, err := ri.Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s %s: %s", u.GetKind(), u.GetName(), err)
	}
	return out
}
