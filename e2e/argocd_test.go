package e2e_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	sigsyaml "sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

var applicationsRes = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// newArgoApp is newApp with Argo CD's repository Secret and an
// Application of the repository's main, whose spec.source also has the
// YAML lines of source (indented as source's fields), synced
// automatically, and pinbot started on it.
func newArgoApp(t *testing.T, name string, files map[string]string, source string) (*app, string) {
	t.Helper()
	return newArgoAppTo(t, name, files, source, "https://kubernetes.default.svc")
}

// newArgoAppTo is newArgoApp with the destination cluster server.
func newArgoAppTo(t *testing.T, name string, files map[string]string, source, server string) (*app, string) {
	t.Helper()
	a, first := newApp(t, name, files)
	url := env.Gitea.RepoURL(org, name)
	a.argoRepoSecret(url)
	a.create(applicationsRes, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: argocd}
spec:
  project: default
  source:
    repoURL: %q
    targetRevision: main
%s  destination: {server: %q, namespace: %s}
  syncPolicy: {automated: {}}
`, name, url, source, server, name))
	a.start(fmt.Sprintf("argocd: {application: %s, namespace: argocd}", name))
	return a, first
}

// argoRepoSecret gives Argo CD the credentials of the private repository
// at url, and makes a push refresh the app, as Argo CD's webhook does.
func (a *app) argoRepoSecret(url string) {
	a.t.Helper()
	if _, err := env.Kube.CoreV1().Secrets(kube.ArgoCDNamespace).Create(testCtx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: a.name + "-repo", Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}},
		StringData: map[string]string{"type": "git", "url": url, "username": env.Gitea.AdminUser, "password": env.Gitea.Token},
	}, metav1.CreateOptions{}); err != nil {
		a.t.Fatal(err)
	}
	a.refresh = func() { a.patchApplication(`{metadata: {annotations: {argocd.argoproj.io/refresh: normal}}}`) }
}

// patchApplication merge-patches the app's Application (YAML), as a
// person with kubectl or the argocd CLI does.
func (a *app) patchApplication(y string) {
	a.t.Helper()
	j, err := sigsyaml.YAMLToJSON([]byte(y))
	if err != nil {
		a.t.Fatalf("YAML literal: %s", err)
	}
	if _, err := env.dyn.Resource(applicationsRes).Namespace(kube.ArgoCDNamespace).Patch(testCtx, a.name, types.MergePatchType, j, metav1.PatchOptions{}); err != nil {
		a.t.Fatalf("patching Application %s: %s", a.name, err)
	}
}

// waitSynced waits for Argo CD's controller to report a finished sync of
// commit: status.sync names it (revision, or every revision of a
// multi-source app) and the operation succeeded.
func (a *app) waitSynced(commit string) {
	a.t.Helper()
	poll.Until(a.t, rollout, "Argo CD syncs "+commit[:8], func() (bool, string) {
		u, err := env.dyn.Resource(applicationsRes).Namespace(kube.ArgoCDNamespace).Get(testCtx, a.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		revs, _, _ := unstructured.NestedStringSlice(u.Object, "status", "sync", "revisions")
		if rev, _, _ := unstructured.NestedString(u.Object, "status", "sync", "revision"); rev != "" {
			revs = append(revs, rev)
		}
		phase, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
		msg, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "message")
		ok := len(revs) > 0 && phase == "Succeeded"
		for _, r := range revs {
			ok = ok && r == commit
		}
		return ok, fmt.Sprintf("revisions %.8s, operation %s: %s", revs, phase, msg)
	})
}

// TestArgoCDDeploysWhatPinbotProves: a directory app. Each merge reaches
// Verified through the real repo-server and application-controller,
// pinbot applying nothing; with automated sync off, a merge is pending
// until someone syncs; a stale node is a mismatch.
func TestArgoCDDeploysWhatPinbotProves(t *testing.T) {
	repo, v1 := pushImage(t, "argo-plain", "v1")
	_, v2 := pushImage(t, "argo-plain", "v2")
	_, v3 := pushImage(t, "argo-plain", "v3")
	a, first := newArgoApp(t, "argo-plain", map[string]string{"deploy/web.yaml": deployment(2, repo+":v1@"+v1)}, "    path: deploy\n")

	a.waitSynced(first)
	// Argo CD's health lags its sync: it may say Missing for a moment
	// after the Pods already run. pinbot reports the health Argo CD gives.
	st, v := a.waitStatus("verified and healthy at the first commit", func(st *status.App, v *verdict.Verification) bool {
		return st.Commit == first && v != nil && v.Verified && st.Health == verdict.Healthy
	})
	if st.Source != "argocd" || st.DeployedCommit != first || st.Sync != status.Synced {
		t.Errorf("status at the first commit: %s", describe(st, v))
	}
	a.waitCommitStatus(first, "success on the first commit", func(s *gitforge.Status) bool { return s.State == "success" })

	// Automated sync off: Argo CD sees the merge (OutOfSync) but does not
	// apply it, and pinbot says it waits for Argo CD.
	a.patchApplication(`{spec: {syncPolicy: null}}`)
	held := a.push(map[string]string{"deploy/web.yaml": deployment(2, repo+":v2@"+v2)}, "Promote argo-plain to v2")
	a.waitCommitStatus(held, "pending while Argo CD does not sync", func(s *gitforge.Status) bool {
		return s.State == "pending" && strings.Contains(s.Description, "Argo CD has not synced "+held+" yet")
	})
	st, v = a.waitStatus("pending behind the merge", func(st *status.App, v *verdict.Verification) bool {
		return st.Commit == held && st.DeployedCommit == first && v != nil && !v.Verified
	})
	if st.Sync != status.OutOfSync {
		t.Errorf("behind the merge: %s", describe(st, v))
	}

	// Automated sync back on: Argo CD syncs the merge; the proof follows.
	a.patchApplication(`{spec: {syncPolicy: {automated: {}}}}`)
	a.waitSynced(held)
	got := a.waitCommitStatus(held, "success once Argo CD syncs v2", func(s *gitforge.Status) bool { return s.State == "success" })
	if want := "2/2 Pods run " + v2[:len("sha256:")+12] + "…"; got.Description != want {
		t.Errorf("commit status %q, want %q", got.Description, want)
	}

	// Argo CD syncs v3 on a node that kept v2: a mismatch, named.
	if err := env.Node.StaleImage(repo, v2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Node.StaleImage(repo, "") })
	third := a.push(map[string]string{"deploy/web.yaml": deployment(2, repo+":v3@"+v3)}, "Promote argo-plain to v3")
	a.waitSynced(third)
	a.waitCommitStatus(third, "failure on the stale node", func(s *gitforge.Status) bool {
		return s.State == "failure" && strings.Contains(s.Description, "Mismatch")
	})
}

// TestArgoCDAppliesToAnotherCluster: the Application's destination is a
// cluster Argo CD knows from a cluster Secret (bearer token, CA); the
// real controller syncs there, and pinbot, reading the same Secret,
// proves the Pods of that cluster.
func TestArgoCDAppliesToAnotherCluster(t *testing.T) {
	spoke, _ := argoCluster(t, "argo-spoke")
	cfg := spoke.Config()

	repo, v1 := pushImage(t, "argo-spoke", "v1")
	_, v2 := pushImage(t, "argo-spoke", "v2")
	a, first := newArgoAppTo(t, "argo-spoke", map[string]string{"deploy/web.yaml": deployment(2, repo+"@"+v1)}, "    path: deploy\n", cfg.Host)
	a.waitSynced(first)
	a.waitVerifiedOn("verified on the spoke", first, "spoke-amd64", v1)
	if _, err := env.Kube.AppsV1().Deployments("argo-spoke").Get(testCtx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the hub has Deployment argo-spoke/web (err %v): Argo CD should have synced to the spoke only", err)
	}

	merge := a.push(map[string]string{"deploy/web.yaml": deployment(2, repo+"@"+v2)}, "Promote argo-spoke to v2")
	a.waitSynced(merge)
	got := a.waitCommitStatus(merge, "success on the spoke", func(s *gitforge.Status) bool { return s.State == "success" })
	if want := "2/2 Pods run " + v2[:len("sha256:")+12] + "…"; got.Description != want {
		t.Errorf("commit status %q, want %q", got.Description, want)
	}
}

// TestArgoCDRendersKustomize: a kustomize app whose kustomization.yaml
// pins one image (images: digest) and whose Application overrides
// another (spec.source.kustomize.images), rendered by the real
// repo-server with the kustomize binary Argo CD runs. pinbot expects, per
// container, what Argo CD applied.
func TestArgoCDRendersKustomize(t *testing.T) {
	web, web1 := pushImage(t, "argo-kust-web", "v1")
	_, web2 := pushImage(t, "argo-kust-web", "v2")
	side, side1 := pushImage(t, "argo-kust-side", "v1")
	kustomization := func(digest string) string {
		return "resources: [web.yaml]\nimages:\n  - name: " + web + "\n    digest: " + digest + "\n"
	}
	a, first := newArgoApp(t, "argo-kust", map[string]string{
		"deploy/kustomization.yaml": kustomization(web1),
		"deploy/web.yaml":           withSidecar(deployment(1, web+":latest"), side+":latest"),
	}, fmt.Sprintf("    path: deploy\n    kustomize: {images: [%q]}\n", side+"@"+side1))
	a.waitSynced(first)
	a.wantDigests(first, map[string]string{"app": web1, "side": side1})

	merge := a.push(map[string]string{"deploy/kustomization.yaml": kustomization(web2)}, "Promote argo-kust-web to v2")
	a.waitSynced(merge)
	a.wantDigests(merge, map[string]string{"app": web2, "side": side1})
}

// TestArgoCDRendersHelm: a Helm app whose Application picks a values
// file and a parameter over the chart's defaults, and a multi-source app
// whose chart takes a values file from a ref source ($values), both
// rendered by the real repo-server with the helm binary Argo CD runs.
func TestArgoCDRendersHelm(t *testing.T) {
	repo, v1 := pushImage(t, "argo-helm", "v1")
	_, v2 := pushImage(t, "argo-helm", "v2")
	_, v3 := pushImage(t, "argo-helm", "v3")
	chart := map[string]string{
		"charts/web/Chart.yaml":         "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"charts/web/values.yaml":        fmt.Sprintf("replicaCount: 1\nimage: {repository: %s, digest: %q}\n", repo, v1),
		"charts/web/values-prod.yaml":   fmt.Sprintf("image: {digest: %q}\n", v2),
		"charts/web/templates/web.yaml": helmDeployment,
		"envs/prod/values.yaml":         fmt.Sprintf("image: {digest: %q}\n", v3),
	}

	t.Run("values and parameters", func(t *testing.T) {
		a, first := newArgoApp(t, "argo-helm", chart,
			"    path: charts/web\n    helm: {valueFiles: [values-prod.yaml], parameters: [{name: replicaCount, value: \"2\"}]}\n")
		a.waitSynced(first)
		v := a.wantDigests(first, map[string]string{"app": v2})
		if len(v.Containers) != 2 {
			t.Errorf("%d containers, want 2 (the parameter's replicaCount)", len(v.Containers))
		}
	})

	t.Run("a ref source's values", func(t *testing.T) {
		a, first := newApp(t, "argo-multi", chart)
		url := env.Gitea.RepoURL(org, a.name)
		a.argoRepoSecret(url)
		a.create(applicationsRes, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, namespace: argocd}
spec:
  project: default
  sources:
  - {repoURL: %q, path: charts/web, targetRevision: main, helm: {valueFiles: [$values/envs/prod/values.yaml]}}
  - {repoURL: %q, targetRevision: main, ref: values}
  destination: {server: "https://kubernetes.default.svc", namespace: %s}
  syncPolicy: {automated: {}}
`, a.name, url, url, a.name))
		a.start(fmt.Sprintf("argocd: {application: %s, namespace: argocd}", a.name))
		a.waitSynced(first)
		a.wantDigests(first, map[string]string{"app": v3})
	})
}

// argoCluster starts another control plane with namespace ns and gives
// Argo CD its cluster Secret (bearer token, CA), as `argocd cluster add`
// does; it returns the cluster and its node.
func argoCluster(t *testing.T, ns string) (*kube.Cluster, *kubeletsim.Sim) {
	t.Helper()
	spoke, node := startSpoke(t, ns)
	cfg := spoke.Config()
	conf, err := json.Marshal(map[string]any{
		"bearerToken":     cfg.BearerToken,
		"tlsClientConfig": map[string]any{"caData": base64.StdEncoding.EncodeToString(cfg.CAData)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.CoreV1().Secrets(kube.ArgoCDNamespace).Create(testCtx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-cluster", Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
		StringData: map[string]string{"name": ns, "server": cfg.Host, "config": string(conf)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return spoke, node
}

// wantDigests waits until pinbot has verified the app at commit and its
// commit status is success, and checks each container's pinned digest
// (by container name) against want.
func (a *app) wantDigests(commit string, want map[string]string) *verdict.Verification {
	a.t.Helper()
	_, v := a.waitStatus("verified at "+commit[:8], func(st *status.App, v *verdict.Verification) bool {
		return st.Commit == commit && v != nil && v.Verified
	})
	for _, c := range v.Containers {
		if c.GitDigest != want[c.Container] || c.RunningDigest != c.GitDigest {
			a.t.Errorf("container %s/%s: Git pins %s and it runs %s; want %s", c.Pod, c.Container, c.GitDigest, c.RunningDigest, want[c.Container])
		}
	}
	a.waitCommitStatus(commit, "success at "+commit[:8], func(s *gitforge.Status) bool { return s.State == "success" })
	return v
}

// withSidecar adds a container named side running image to a
// deployment's Pod template.
func withSidecar(deployment, image string) string {
	return strings.Replace(deployment, "      containers:\n", "      containers:\n        - name: side\n          image: "+image+"\n", 1)
}

// helmDeployment is a chart template of a Deployment named after the
// release, whose replicas and image come from the values.
const helmDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
        - name: app
          image: "{{ .Values.image.repository }}@{{ .Values.image.digest }}"
`

// TestArgoCDHooks: an app with a PreSync hook Job that runs a migration
// image, which Argo CD runs before each sync and keeps afterwards
// (BeforeHookCreation): the real controller's hook Pods sit next to the
// app's. pinbot proves the app's workloads, and a completed hook of the
// last sync neither fails nor holds the proof.
func TestArgoCDHooks(t *testing.T) {
	repo, v1 := pushImage(t, "argo-hooks", "v1")
	_, v2 := pushImage(t, "argo-hooks", "v2")
	migrate, m1 := pushImage(t, "argo-hooks-migrate", "v1")
	_, m2 := pushImage(t, "argo-hooks-migrate", "v2")
	files := func(app, migration string) map[string]string {
		return map[string]string{
			"deploy/web.yaml": deployment(1, repo+"@"+app),
			"deploy/migrate.yaml": fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  annotations: {argocd.argoproj.io/hook: PreSync}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: %s@%s
`, migrate, migration),
		}
	}
	a, first := newArgoApp(t, "argo-hooks", files(v1, m1), "    path: deploy\n")
	a.waitSynced(first)
	a.wantDigests(first, map[string]string{"app": v1})

	merge := a.push(files(v2, m2), "Promote argo-hooks to v2")
	a.waitSynced(merge)
	a.wantDigests(merge, map[string]string{"app": v2})
	job, err := env.Kube.BatchV1().Jobs("argo-hooks").Get(testCtx, "migrate", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the hook Job of the last sync: %s", err)
	}
	if got := job.Spec.Template.Spec.Containers[0].Image; got != migrate+"@"+m2 || job.Status.Succeeded != 1 {
		t.Errorf("hook Job runs %s, succeeded %d; want %s@%s, succeeded", got, job.Status.Succeeded, migrate, m2)
	}
}

// TestArgoCDViaAPI: pinbot reads nothing of the cluster Argo CD deploys
// to itself, only through an Argo CD account's API token (via: api); it reads
// the Application's resource tree and live objects from the real Argo CD
// API server, and proves the Pods of that cluster through it. A token
// Argo CD refuses is an HTTP 401, and never shows.
func TestArgoCDViaAPI(t *testing.T) {
	spoke, _ := argoCluster(t, "argo-api")
	cfg := spoke.Config()
	token, err := env.argo.AccountToken(testCtx, kube.ArgoCDReader)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "argocd-token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	repo, v1 := pushImage(t, "argo-api", "v1")
	_, v2 := pushImage(t, "argo-api", "v2")
	a, first := newApp(t, "argo-api", map[string]string{"deploy/web.yaml": deployment(2, repo+"@"+v1)})
	url := env.Gitea.RepoURL(org, a.name)
	a.argoRepoSecret(url)
	a.create(applicationsRes, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: argo-api, namespace: argocd}
spec:
  project: default
  source: {repoURL: %q, path: deploy, targetRevision: main}
  destination: {server: %q, namespace: argo-api}
  syncPolicy: {automated: {}}
`, url, cfg.Host))
	a.start("argocd: {application: argo-api, namespace: argocd}",
		fmt.Sprintf("argocd: {url: %q, tokenFile: %q, via: api}", env.argo.URL, tokenFile))
	a.waitSynced(first)
	a.waitVerifiedOn("verified through Argo CD's API", first, "spoke-amd64", v1)
	merge := a.push(map[string]string{"deploy/web.yaml": deployment(2, repo+"@"+v2)}, "Promote argo-api to v2")
	a.waitSynced(merge)
	a.wantDigests(merge, map[string]string{"app": v2})

	const revoked = "a-revoked-token-77aa"
	if err := os.WriteFile(tokenFile, []byte(revoked+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, _, err := a.r.Status(testCtx, a.name)
	if err == nil || st == nil || st.Verified || !strings.Contains(st.Error, "HTTP 401") {
		t.Fatalf("with a refused token: status %+v, error %v; want unverified, naming HTTP 401", st, err)
	}
	for _, secret := range []string{token, revoked} {
		if strings.Contains(st.Error, secret) || strings.Contains(err.Error(), secret) {
			t.Errorf("a token shows: %s", st.Error)
		}
	}
}
