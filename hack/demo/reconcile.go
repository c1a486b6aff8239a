package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
)

// mergeAndReconcile merges the promotion as a reviewer would, then starts
// a real control plane with a simulated node and lets pinbot sync, wait for
// the rollout and prove which digest the Pods run.
func (d *demo) mergeAndReconcile(ctx context.Context) error {
	banner("A reviewer merges the promotion")
	sha, err := d.gitea.MergePull(ctx, owner, repo, d.pr)
	if err != nil {
		return err
	}
	fmt.Printf("merged pull request #%d as %.12s\n", d.pr, sha)

	if err := waitForControlPlane(ctx); err != nil {
		return err
	}
	banner("Starting etcd, kube-apiserver and kube-controller-manager, and a simulated node")
	cluster, err := kube.Start(ctx, kube.Options{})
	if err != nil {
		return err
	}
	d.closers = append(d.closers, func() { _ = cluster.Stop() })
	d.cluster = cluster
	fmt.Printf("control plane at %s, up in %s\n", cluster.Host, cluster.StartupTime.Round(time.Millisecond))
	node := kubeletsim.New(cluster.Config(), kubeletsim.WithNodeName("demo-node"),
		kubeletsim.WithBasicAuth(d.gitea.RegistryHost, d.gitea.AdminUser, d.gitea.Token))
	if err := node.Start(ctx); err != nil {
		return fmt.Errorf("starting the simulated node: %w", err)
	}
	d.closers = append(d.closers, node.Stop)
	d.node = node
	cs, err := kubernetes.NewForConfig(cluster.Config())
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pinbot-system"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating pinbot-system: %w", err)
	}

	config := filepath.Join(d.dir, "reconciler.yaml")
	body := fmt.Sprintf(`interval: 60s
forge: {url: %q, tokenFile: %q}
apps:
  - name: web
    repo: %s
    branch: main
    path: envs/prod
    namespace: web
    allowNamespaces: [web]
    allowClusterScoped: [Namespace]
    syncPolicy: {automated: false}
`, d.gitea.URL, d.token, d.gitea.RepoURL(owner, repo))
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		return err
	}
	fmt.Printf("\nreconciler config (%s):\n%s", config, body)
	common := []string{"--config", config, "--kubeconfig", cluster.Kubeconfig, "--cache-dir", filepath.Join(d.dir, "cache")}
	d.reconcilerConfig, d.kubeconfig = config, cluster.Kubeconfig
	d.ran.apps = append(d.ran.apps, fmt.Sprintf("{name: web, repo: %s, branch: main, path: envs/prod, namespace: web, "+
		"allowNamespaces: [web], allowClusterScoped: [Namespace], syncPolicy: {automated: false}}", d.gitea.RepoURL(owner, repo)))

	banner("pinbot syncs the merged commit, follows the rollout and verifies the running Pods")
	if _, err := d.run(ctx, append([]string{"sync", "web"}, common...)...); err != nil {
		return err
	}
	if _, err := d.run(ctx, append([]string{"verify", "web"}, common...)...); err != nil {
		return err
	}
	if _, err := d.run(ctx, append([]string{"history", "web"}, common...)...); err != nil {
		return err
	}
	return d.showReport(ctx, sha)
}

// showReport prints what pinbot reported back to Git: the merged commit's
// status and the proof commented on the pull request.
func (d *demo) showReport(ctx context.Context, sha string) error {
	forge, err := gitforge.NewGitea(d.gitea.URL, d.gitea.Token)
	if err != nil {
		return err
	}
	r := gitforge.Repo{Owner: owner, Name: repo}
	statuses, err := forge.Statuses(ctx, r, sha)
	if err != nil {
		return err
	}
	banner("What pinbot reported back to Gitea")
	for _, s := range statuses {
		fmt.Printf("commit %.12s status %s: %s (%s)\n", sha, s.Context, s.State, s.Description)
	}
	comments, err := forge.Comments(ctx, r, d.pr)
	if err != nil {
		return err
	}
	if len(comments) > 0 {
		fmt.Printf("\ncomment on pull request #%d (%s/%s/%s/pulls/%d):\n%s\n", d.pr, d.gitea.URL, owner, repo, d.pr, comments[len(comments)-1])
	}
	return nil
}
