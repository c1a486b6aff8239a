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

// The Argo CD step: an app the real Argo CD deploys (its
// application-controller and repo-server, built by `make argocd`), next to
// pinbot's own web. pinbot only reads and proves.

const guestbook = "guestbook"

var applications = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// argoCD shows a verify-only app: verified at the head, Pending after a
// merge Argo CD has not synced (automated sync off), verified again once
// it has, with the results posted on the head commit.
func (d *demo) argoCD(ctx context.Context) error {
	if err := waitForBuild(ctx, "Argo CD", "PINBOT_ARGOCD_BUILD"); err != nil {
		return err
	}
	banner("Argo CD deploys guestbook; pinbot proves what runs, without taking it over")
	c := d.cluster
	if c == nil {
		return fmt.Errorf("the Argo CD step needs the control plane of the reconcile step")
	}
	argo, err := c.StartArgoCD(ctx, 30*time.Second)
	if err != nil {
		return fmt.Errorf("starting Argo CD: %w", err)
	}
	d.closers = append(d.closers, func() { _ = argo.Stop() })
	fmt.Println("Argo CD's application-controller and repo-server run against the cluster (logs: " + argo.Logs.Controller + ")")
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: guestbook}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", guestbook, err)
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

	url := d.gitea.RepoURL(owner, guestbook)
	if _, err := cs.CoreV1().Secrets(kube.ArgoCDNamespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "guestbook-repo", Labels: map[string]string{"argocd.argoproj.io/secret-type": "repository"}},
		StringData: map[string]string{"type": "git", "url": url, "username": d.gitea.AdminUser, "password": d.gitea.Token},
	}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Argo CD's repository Secret: %w", err)
	}
	app := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook, namespace: argocd}
spec:
  project: default
  source: {repoURL: %q, path: deploy, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: guestbook}
  syncPolicy: {automated: {}}
`, url)
	u := &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal([]byte(app), &u.Object); err != nil {
		return err
	}
	if _, err := dyn.Resource(applications).Namespace(kube.ArgoCDNamespace).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the Application: %w", err)
	}
	fmt.Printf("\nApplication argocd/guestbook:\n%s", app)
	if err := waitArgoSynced(ctx, dyn, first); err != nil {
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
	d.ran.apps = append(d.ran.apps, "{name: guestbook, argocd: {application: guestbook, namespace: argocd}}")
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

	banner("A merge moves guestbook to v2; Argo CD, its automated sync off, has not synced it")
	if err := patchApplication(ctx, dyn, `{"spec": {"syncPolicy": null}}`); err != nil {
		return err
	}
	second, err := pushGuestbook(ctx, d, v2.pinned())
	if err != nil {
		return err
	}
	fmt.Printf("pushed %.12s, pinning %s\n", second, v2.short())
	// Not verified: exit 1, as a script would see it.
	_, _ = d.run(ctx, append([]string{"verify", guestbook, "--report"}, common...)...)

	banner("Automated sync back on: Argo CD syncs v2; pinbot verifies it and reports on the commit")
	if err := patchApplication(ctx, dyn, `{"spec": {"syncPolicy": {"automated": {}}}, "metadata": {"annotations": {"argocd.argoproj.io/refresh": "normal"}}}`); err != nil {
		return err
	}
	if err := waitArgoSynced(ctx, dyn, second); err != nil {
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

// patchApplication merge-patches guestbook's Application (JSON), as
// kubectl or the argocd CLI would.
func patchApplication(ctx context.Context, dyn dynamic.Interface, patch string) error {
	if _, err := dyn.Resource(applications).Namespace(kube.ArgoCDNamespace).Patch(ctx, guestbook, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patching the Application: %w", err)
	}
	return nil
}

// waitArgoSynced waits (up to 2 minutes) until Argo CD reports a
// finished sync of commit, and says so.
func waitArgoSynced(ctx context.Context, dyn dynamic.Interface, commit string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		u, err := dyn.Resource(applications).Namespace(kube.ArgoCDNamespace).Get(ctx, guestbook, metav1.GetOptions{})
		if err == nil {
			rev, _, _ := unstructured.NestedString(u.Object, "status", "sync", "revision")
			phase, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "phase")
			result, _, _ := unstructured.NestedString(u.Object, "status", "operationState", "syncResult", "revision")
			if rev == commit && result == commit && phase == "Succeeded" {
				fmt.Printf("Argo CD: synced %.12s\n", commit)
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for Argo CD to sync %.12s: %w", commit, ctx.Err())
		case <-tick.C:
		}
	}
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
