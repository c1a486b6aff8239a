package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	sigsyaml "sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/kube"
)

// The Argo CD step: an app Argo CD deploys, next to pinbot's own web. The
// demo plays Argo CD's controller (it applies the Deployment and writes the
// Application's status, as Argo CD would); pinbot only reads and proves.

const guestbook = "guestbook"

var (
	applications = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	deployments  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// argoCD shows a verify-only app: verified at the head, Pending after a
// merge Argo CD has not synced, verified again once it has, with the
// results posted on the head commit.
func (d *demo) argoCD(ctx context.Context) error {
	banner("Argo CD deploys guestbook; pinbot proves what runs, without taking it over")
	c := d.cluster
	if c == nil {
		return fmt.Errorf("the Argo CD step needs the control plane of the reconcile step")
	}
	crd, err := kube.CRDFile(kube.ApplicationCRD)
	if err != nil {
		return err
	}
	if err := c.InstallCRDs(ctx, crd); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	for _, ns := range []string{"argocd", guestbook} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	v1, err := d.build(ctx, guestbook, "v1", "1.0.0")
	if err != nil {
		return err
	}
	v2, err := d.build(ctx, guestbook, "v2", "2.0.0")
	if err != nil {
		return err
	}
	tree := filepath.Join(d.dir, guestbook)
	if err := writeGuestbook(tree, v1.pinned()); err != nil {
		return err
	}
	first, err := d.gitea.CreateRepoFromDir(ctx, owner, guestbook, "main", tree)
	if err != nil {
		return err
	}
	fmt.Printf("created %s/%s at %.12s, pinning %s\n", owner, guestbook, first, v1.short())

	fmt.Println("\n(The demo plays Argo CD: it applies the Deployment and writes the Application's status.)")
	if err := argoApply(ctx, dyn, v1.pinned()); err != nil {
		return err
	}
	app := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook, namespace: argocd}
spec:
  project: default
  source: {repoURL: %q, path: deploy, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: guestbook}
`, d.gitea.RepoURL(owner, guestbook))
	u := &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal([]byte(app), &u.Object); err != nil {
		return err
	}
	if _, err := dyn.Resource(applications).Namespace("argocd").Create(ctx, u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the Application: %w", err)
	}
	fmt.Printf("\nApplication argocd/guestbook:\n%s", app)
	history := []string{first}
	if err := argoSynced(ctx, dyn, history); err != nil {
		return err
	}

	config := filepath.Join(d.dir, "reconciler-argocd.yaml")
	body := fmt.Sprintf(`interval: 60s
forge: {url: %q, tokenFile: %q}
apps:
  - name: web                                           # pinbot's own: it syncs it
    repo: %s
    path: envs/prod
    namespace: web
    allowClusterScoped: [Namespace]
  - name: guestbook                                     # verify-only: Argo CD syncs it
    argocd: {application: guestbook, namespace: argocd}
`, d.gitea.URL, d.token, d.gitea.RepoURL(owner, repo))
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		return err
	}
	fmt.Printf("\nreconciler config (%s):\n%s", config, body)
	common := []string{"--config", config, "--kubeconfig", c.Kubeconfig, "--cache-dir", filepath.Join(d.dir, "cache")}
	if err := waitGuestbook(ctx, cs, v1.pinned()); err != nil {
		return err
	}
	if _, err := d.run(ctx, append([]string{"status"}, common...)...); err != nil {
		return err
	}
	if _, err := d.run(ctx, append([]string{"verify", guestbook}, common...)...); err != nil {
		return err
	}

	banner("A merge moves guestbook to v2; Argo CD has not synced it yet")
	second, err := pushGuestbook(ctx, d, v2.pinned())
	if err != nil {
		return err
	}
	fmt.Printf("pushed %.12s, pinning %s\n", second, v2.short())
	// Not verified: exit 1, as a script would see it.
	_, _ = d.run(ctx, append([]string{"verify", guestbook, "--report"}, common...)...)

	banner("Argo CD syncs v2; pinbot verifies it and reports on the commit")
	if err := argoApply(ctx, dyn, v2.pinned()); err != nil {
		return err
	}
	history = append(history, second)
	if err := argoSynced(ctx, dyn, history); err != nil {
		return err
	}
	if err := waitGuestbook(ctx, cs, v2.pinned()); err != nil {
		return err
	}
	if _, err := d.run(ctx, append([]string{"verify", guestbook, "--report"}, common...)...); err != nil {
		return err
	}
	forge, err := gitforge.NewGitea(d.gitea.URL, d.gitea.Token)
	if err != nil {
		return err
	}
	statuses, err := forge.Statuses(ctx, gitforge.Repo{Owner: owner, Name: guestbook}, second)
	if err != nil {
		return err
	}
	for _, s := range statuses {
		fmt.Printf("\ncommit %.12s status %s: %s (%s)\n", second, s.Context, s.State, s.Description)
	}
	return nil
}

func guestbookDeployment(image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: guestbook
spec:
  replicas: 2
  strategy:
    rollingUpdate: {maxUnavailable: 0, maxSurge: 1}
  selector:
    matchLabels: {app: guestbook}
  template:
    metadata:
      labels: {app: guestbook}
    spec:
      containers:
        - name: guestbook
          image: %s
`, image)
}

func writeGuestbook(dir, image string) error {
	p := filepath.Join(dir, "deploy", "guestbook.yaml")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(guestbookDeployment(image)), 0o644)
}

// pushGuestbook commits guestbook's Deployment pinned to image on main.
func pushGuestbook(ctx context.Context, d *demo, image string) (string, error) {
	return d.gitea.Commit(ctx, owner, guestbook, "main", "main", map[string]string{"deploy/guestbook.yaml": guestbookDeployment(image)}, "guestbook: v2")
}

// argoApply applies guestbook's Deployment as Argo CD's controller would.
func argoApply(ctx context.Context, dyn dynamic.Interface, image string) error {
	u := &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal([]byte(guestbookDeployment(image)), &u.Object); err != nil {
		return err
	}
	u.SetNamespace(guestbook)
	_, err := dyn.Resource(deployments).Namespace(guestbook).Apply(ctx, guestbook, u, metav1.ApplyOptions{FieldManager: "argocd-controller", Force: true})
	if err != nil {
		return fmt.Errorf("applying guestbook as Argo CD: %w", err)
	}
	return nil
}

// argoSynced writes the status of Argo CD's successful sync of the last
// commit of history.
func argoSynced(ctx context.Context, dyn dynamic.Interface, history []string) error {
	now := time.Now().UTC().Format(time.RFC3339)
	head := history[len(history)-1]
	var hist []any
	for i, c := range history {
		hist = append(hist, map[string]any{"id": i, "revision": c, "deployedAt": now})
	}
	status := map[string]any{
		"reconciledAt": now,
		"operationState": map[string]any{
			"operation": map[string]any{"sync": map[string]any{"revision": head}},
			"phase":     "Succeeded", "startedAt": now, "finishedAt": now,
			"syncResult": map[string]any{"revision": head},
		},
		"history": hist,
		"health":  map[string]any{"status": "Healthy"},
		"sync":    map[string]any{"status": "Synced", "revision": head},
		"resources": []any{map[string]any{
			"group": "apps", "version": "v1", "kind": "Deployment", "namespace": guestbook, "name": guestbook,
		}},
	}
	patch, err := sigsyaml.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	j, err := sigsyaml.YAMLToJSON(patch)
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(applications).Namespace("argocd").Patch(ctx, guestbook, types.MergePatchType, j, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("writing the Application's status: %w", err)
	}
	fmt.Printf("Argo CD: synced %.12s, healthy\n", head)
	return nil
}

// waitGuestbook waits (up to 90 s) until guestbook's Pods running image are
// all ready.
func waitGuestbook(ctx context.Context, cs kubernetes.Interface, image string) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		dep, err := cs.AppsV1().Deployments(guestbook).Get(ctx, guestbook, metav1.GetOptions{})
		if err == nil && dep.Status.ObservedGeneration == dep.Generation && dep.Status.UpdatedReplicas == 2 &&
			dep.Status.ReadyReplicas == 2 && dep.Status.Replicas == 2 && dep.Spec.Template.Spec.Containers[0].Image == image {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for guestbook's rollout of %s: %w", image, ctx.Err())
		case <-tick.C:
		}
	}
}
