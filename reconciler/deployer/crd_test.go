package deployer_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	sigsyaml "sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/verdict"
)

var (
	applications    = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	kustomizations  = schema.GroupVersionResource{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Resource: "kustomizations"}
	gitRepositories = schema.GroupVersionResource{Group: "source.toolkit.fluxcd.io", Version: "v1", Resource: "gitrepositories"}
)

const (
	commitA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	commitB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	digestA = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	digestB = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// TestOnTheRealCRDs writes Argo CD's and Flux's objects as the deployers
// would, on the real CRDs in a real control plane, reads them back through
// the dynamic client, and runs the decoders and decisions on what the API
// server kept: a field name this package gets wrong is pruned by the CRD's
// schema and the decisions below change.
func TestOnTheRealCRDs(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries and the CRDs in bin/ (make kube crds)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster, err := kube.Start(ctx, kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			fmt.Fprintf(os.Stderr, "control plane logs:\n%s", cluster.Tail(40))
		}
		if err := cluster.Stop(); err != nil {
			t.Errorf("stopping the control plane: %s", err)
		}
	})
	if err := cluster.InstallNamedCRDs(ctx, kube.ApplicationCRD, kube.KustomizationCRD, kube.GitRepositoryCRD); err != nil {
		t.Fatal(err)
	}
	core := kubernetes.NewForConfigOrDie(cluster.Config())
	for _, ns := range []string{"argocd", "flux-system"} {
		if _, err := core.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating namespace %s: %s", ns, err)
		}
	}
	client := dynamic.NewForConfigOrDie(cluster.Config())

	t.Run("Argo CD", func(t *testing.T) { testArgoCD(ctx, t, client) })
	t.Run("Flux", func(t *testing.T) { testFlux(ctx, t, client) })
}

func testArgoCD(ctx context.Context, t *testing.T, client dynamic.Interface) {
	apps := client.Resource(applications).Namespace("argocd")
	create(ctx, t, apps, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook, namespace: argocd}
spec:
  project: default
  source:
    repoURL: https://git.example/team/guestbook.git
    path: charts/guestbook
    targetRevision: main
    helm:
      valueFiles: [values.yaml, values-prod.yaml]
      parameters:
      - {name: replicaCount, value: "3"}
      - {name: image.tag, value: "v2", forceString: true}
  destination: {server: "https://kubernetes.default.svc", namespace: web}
`)
	// Argo CD synced commit A, and reconciled the app after the sync.
	// The CRD has no status subresource: the status is merged into the
	// object.
	patch(ctx, t, apps, "guestbook", `
status:
  reconciledAt: "2026-01-02T10:00:05Z"
  operationState:
    operation: {sync: {revision: `+commitA+`}}
    phase: Succeeded
    startedAt: "2026-01-02T10:00:00Z"
    finishedAt: "2026-01-02T10:00:04Z"
    syncResult: {revision: `+commitA+`}
  history:
  - {id: 0, revision: `+commitA+`, deployedAt: "2026-01-02T10:00:04Z"}
  health: {status: Healthy}
  sync: {status: Synced, revision: `+commitA+`}
  resources:
  - {group: apps, version: v1, kind: Deployment, namespace: web, name: guestbook, status: Synced, health: {status: Healthy}}
  - {version: v1, kind: Service, namespace: web, name: guestbook, status: Synced}
  - {group: batch, version: v1, kind: Job, namespace: web, name: migrate, hook: true}
`)
	app := readApp(ctx, t, apps)
	src, err := app.Source()
	if err != nil {
		t.Fatal(err)
	}
	wantSrc := deployer.Source{
		Kind: deployer.ArgoCD, Object: "Application argocd/guestbook", RepoURL: "https://git.example/team/guestbook.git",
		Path: "charts/guestbook", Ref: deployer.GitRef{Revision: "main"}, Namespace: "web", Index: -1,
		Helm: &deployer.Helm{
			ReleaseName: "guestbook", Namespace: "web", ValueFiles: []string{"values.yaml", "values-prod.yaml"},
			Parameters: []deployer.HelmParameter{{Name: "replicaCount", Value: "3"}, {Name: "image.tag", Value: "v2", ForceString: true}},
		},
	}
	if diff := cmp.Diff(wantSrc, src); diff != "" {
		t.Errorf("Source (-want +got):\n%s", diff)
	}
	wantWorkloads := []object.Ref{{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "guestbook"}}
	if diff := cmp.Diff(wantWorkloads, app.Workloads()); diff != "" {
		t.Errorf("Workloads (-want +got):\n%s", diff)
	}
	check(t, "synced at the head", deployer.ArgoCD, src, app, commitA, digestA, digestA,
		outcome{deployed: commitA, health: deployer.Health{Status: "Healthy", Counts: true, Healthy: true},
			verdict: deployer.Judgement{Verdict: verdict.Verified}, verified: true})

	// A merge moved the head to B; Argo CD started a sync that still runs.
	patch(ctx, t, apps, "guestbook", `
status:
  operationState:
    operation: {sync: {revision: `+commitB+`}}
    phase: Running
    startedAt: "2026-01-02T11:00:00Z"
    finishedAt: null
    syncResult: null
  sync: {status: OutOfSync, revision: `+commitB+`}
`)
	app = readApp(ctx, t, apps)
	check(t, "a sync still running", deployer.ArgoCD, src, app, commitB, digestB, digestA,
		outcome{deployed: commitA, health: deployer.Health{Status: "Healthy", Reason: "Argo CD's operation is still Running"},
			verdict: deployer.Judgement{Verdict: verdict.Pending, Reason: "Argo CD has not synced " + commitB + " yet"}})

	// The sync succeeded, but Argo CD has not assessed health since.
	patch(ctx, t, apps, "guestbook", `
status:
  operationState:
    phase: Succeeded
    finishedAt: "2026-01-02T11:00:09Z"
    syncResult: {revision: `+commitB+`}
  history:
  - {id: 0, revision: `+commitA+`, deployedAt: "2026-01-02T10:00:04Z"}
  - {id: 1, revision: `+commitB+`, deployedAt: "2026-01-02T11:00:09Z"}
`)
	app = readApp(ctx, t, apps)
	check(t, "synced, health not reassessed", deployer.ArgoCD, src, app, commitB, digestB, digestB,
		outcome{deployed: commitB, health: deployer.Health{Status: "Healthy", Reason: "Argo CD has not reconciled the app since its last operation finished"},
			verdict: deployer.Judgement{Verdict: verdict.Verified}, verified: true})

	// A stale node still runs A's digest at the head.
	check(t, "a stale node", deployer.ArgoCD, src, app, commitB, digestB, digestA,
		outcome{deployed: commitB, health: deployer.Health{Status: "Healthy", Reason: "Argo CD has not reconciled the app since its last operation finished"},
			verdict: deployer.Judgement{Verdict: verdict.Mismatch, Reason: "running " + digestA + ", Git " + digestB}})

	patch(ctx, t, apps, "guestbook", `status: {reconciledAt: "2026-01-02T11:00:10Z"}`)
	app = readApp(ctx, t, apps)
	check(t, "reconciled after the sync", deployer.ArgoCD, src, app, commitB, digestB, digestB,
		outcome{deployed: commitB, health: deployer.Health{Status: "Healthy", Counts: true, Healthy: true},
			verdict: deployer.Judgement{Verdict: verdict.Verified}, verified: true})
}

func testFlux(ctx context.Context, t *testing.T, client dynamic.Interface) {
	repos := client.Resource(gitRepositories).Namespace("flux-system")
	create(ctx, t, repos, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: podinfo, namespace: flux-system}
spec:
  interval: 1m
  url: https://git.example/team/podinfo.git
  ref: {branch: main}
`)
	kss := client.Resource(kustomizations).Namespace("flux-system")
	create(ctx, t, kss, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: podinfo, namespace: flux-system}
spec:
  interval: 10m
  prune: true
  path: ./apps/podinfo
  targetNamespace: web
  sourceRef: {kind: GitRepository, name: podinfo}
`)
	// Flux applied commit A: its status goes through the status
	// subresource.
	updateStatus(ctx, t, kss, "podinfo", `
lastAppliedRevision: main@sha1:`+commitA+`
lastAttemptedRevision: main@sha1:`+commitA+`
inventory:
  entries:
  - {id: _web__Namespace, v: v1}
  - {id: web_podinfo_apps_Deployment, v: v1}
  - {id: web_podinfo__Service, v: v1}
conditions:
- {type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: main@sha1:`+commitA+`", lastTransitionTime: "2026-01-02T10:00:04Z", observedGeneration: 1}
`)
	repo, err := deployer.GitRepositoryFrom(get(ctx, t, repos, "podinfo"))
	if err != nil {
		t.Fatal(err)
	}
	ks := readKustomization(ctx, t, kss)
	if ns, name, err := ks.GitRepository(); err != nil || ns != "flux-system" || name != "podinfo" {
		t.Errorf("GitRepository() = %s/%s, %v; want flux-system/podinfo", ns, name, err)
	}
	src, err := ks.Source(repo)
	if err != nil {
		t.Fatal(err)
	}
	wantSrc := deployer.Source{
		Kind: deployer.Flux, Object: "Kustomization flux-system/podinfo", RepoURL: "https://git.example/team/podinfo.git",
		Path: "apps/podinfo", Ref: deployer.GitRef{Branch: "main"}, Namespace: "web", Index: -1,
	}
	if diff := cmp.Diff(wantSrc, src); diff != "" {
		t.Errorf("Source (-want +got):\n%s", diff)
	}
	workloads, err := ks.Workloads()
	if err != nil {
		t.Fatal(err)
	}
	wantWorkloads := []object.Ref{{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "podinfo"}}
	if diff := cmp.Diff(wantWorkloads, workloads); diff != "" {
		t.Errorf("Workloads (-want +got):\n%s", diff)
	}
	ready := deployer.Health{Status: "Ready", Counts: true, Healthy: true}
	check(t, "applied at the head", deployer.Flux, src, ks, commitA, digestA, digestA,
		outcome{deployed: commitA, health: ready, verdict: deployer.Judgement{Verdict: verdict.Verified}, verified: true})
	check(t, "a merge Flux has not applied", deployer.Flux, src, ks, commitB, digestB, digestA,
		outcome{deployed: commitA, health: ready,
			verdict: deployer.Judgement{Verdict: verdict.Pending, Reason: "Flux has not applied " + commitB + " yet"}})

	updateStatus(ctx, t, kss, "podinfo", `
lastAppliedRevision: main@sha1:`+commitB+`
lastAttemptedRevision: main@sha1:`+commitB+`
inventory:
  entries:
  - {id: web_podinfo_apps_Deployment, v: v1}
conditions:
- {type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: main@sha1:`+commitB+`", lastTransitionTime: "2026-01-02T11:00:04Z", observedGeneration: 1}
`)
	ks = readKustomization(ctx, t, kss)
	check(t, "applied the new head", deployer.Flux, src, ks, commitB, digestB, digestB,
		outcome{deployed: commitB, health: ready, verdict: deployer.Judgement{Verdict: verdict.Verified}, verified: true})
	check(t, "a stale node", deployer.Flux, src, ks, commitB, digestB, digestA,
		outcome{deployed: commitB, health: ready, verdict: deployer.Judgement{Verdict: verdict.Mismatch, Reason: "running " + digestA + ", Git " + digestB}})
}

// healthReporter is what Application and Kustomization have in common.
type healthReporter interface {
	Health() deployer.Health
}

type outcome struct {
	deployed string
	health   deployer.Health
	verdict  deployer.Judgement
	verified bool
}

// check runs the decisions for one container that the head pins at
// headDigest, the deployed revision at A's or B's digest, and that runs
// running.
func check(t *testing.T, name string, kind deployer.Kind, src deployer.Source, obj healthReporter, head, headDigest, running string, want outcome) {
	t.Helper()
	var rev deployer.Revision
	var err error
	switch o := obj.(type) {
	case *deployer.Application:
		rev, err = o.Deployed(src)
	case *deployer.Kustomization:
		rev, err = o.Deployed()
	}
	if err != nil {
		t.Fatalf("%s: Deployed: %s", name, err)
	}
	deployedDigest := map[string]string{commitA: digestA, commitB: digestB}[rev.Commit]
	atHead := rev.AtHead(head)
	judged := deployer.Judge(kind, head, atHead, deployer.Container{Head: headDigest, Deployed: deployedDigest, Running: running})
	got := outcome{
		deployed: rev.Commit,
		health:   obj.Health(),
		verdict:  judged,
		verified: deployer.IsVerified(atHead, []verdict.Verdict{judged.Verdict}),
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(outcome{})); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

func create(ctx context.Context, t *testing.T, r dynamic.ResourceInterface, y string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatalf("YAML literal: %s", err)
	}
	if _, err := r.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s %s: %s", u.GetKind(), u.GetName(), err)
	}
}

func patch(ctx context.Context, t *testing.T, r dynamic.ResourceInterface, name, y string) {
	t.Helper()
	j, err := sigsyaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("YAML literal: %s", err)
	}
	if _, err := r.Patch(ctx, name, types.MergePatchType, j, metav1.PatchOptions{}); err != nil {
		t.Fatalf("merge-patching %s: %s", name, err)
	}
}

// updateStatus replaces the status of the named object through its status
// subresource, as a controller does.
func updateStatus(ctx context.Context, t *testing.T, r dynamic.ResourceInterface, name, statusYAML string) {
	t.Helper()
	u := get(ctx, t, r, name)
	status := map[string]any{}
	if err := sigsyaml.Unmarshal([]byte(statusYAML), &status); err != nil {
		t.Fatalf("YAML literal: %s", err)
	}
	status["observedGeneration"] = u.GetGeneration()
	u.Object["status"] = status
	if _, err := r.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating the status of %s: %s", name, err)
	}
}

func get(ctx context.Context, t *testing.T, r dynamic.ResourceInterface, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := r.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting %s: %s", name, err)
	}
	return u
}

func readApp(ctx context.Context, t *testing.T, r dynamic.ResourceInterface) *deployer.Application {
	t.Helper()
	a, err := deployer.ApplicationFrom(get(ctx, t, r, "guestbook"))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func readKustomization(ctx context.Context, t *testing.T, r dynamic.ResourceInterface) *deployer.Kustomization {
	t.Helper()
	k, err := deployer.KustomizationFrom(get(ctx, t, r, "podinfo"))
	if err != nil {
		t.Fatal(err)
	}
	return k
}
