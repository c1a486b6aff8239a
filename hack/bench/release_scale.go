package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"pinbot.dev/pinbot/internal/testenv/kube"
)

// The release measurements at scale: besides the chain measured, serve
// runs releaseFillApps other apps, in releaseFillRepos repositories that
// each declare a staging → prod chain of their own. They are Argo CD
// Applications pinbot verifies (Argo CD's Deployments, one Pod each), so
// every chain has proofs to read and ledgers to keep.
const (
	releaseFillApps  = 1000
	releaseFillRepos = 20
	releaseFillNS    = "fill"
)

// setUpFill creates the other apps' repositories, namespaces, Deployments
// and Applications, waits until their Pods run, and returns what serve's
// config adds for them: their repositories under promote: and the
// Applications' discovery.
func (b *releaseBench) setUpFill(ctx context.Context) (string, error) {
	perRepo := b.fill / releaseFillRepos / 2 // services per repository, each in staging and prod
	image := byDigest(b.refs[0])
	if err := b.namespaces(ctx, releaseFillNS+"-staging", releaseFillNS+"-prod", "argocd"); err != nil {
		return "", err
	}
	crd, err := kube.CRDFile(kube.ApplicationCRD)
	if err != nil {
		return "", err
	}
	if err := b.cluster.InstallCRDs(ctx, crd); err != nil {
		return "", err
	}
	var cfg strings.Builder
	for k := range releaseFillRepos {
		repo := fmt.Sprintf("fill%02d", k)
		commit, err := b.fillRepo(ctx, repo, k, perRepo, image)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&cfg, "  - {repo: %s/%s, images: [%s]}\n", b.owner, repo, b.repository())
		err = parallel(ctx, 2*perRepo, 4, func(i int) error {
			env, name := fillApp(k, i/2, i%2)
			ns := releaseFillNS + "-" + env
			d := scaleDeployment(name, image)
			d.Spec.Replicas = ptr.To(int32(1))
			if _, err := b.kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{FieldManager: "argocd-controller"}); err != nil {
				return err
			}
			dest := map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns}
			app := syncedApplication(name+"-"+env, "bench=release", b.gitea.RepoURL(b.owner, repo), "envs/"+env+"/"+name, dest, name, commit)
			_, err := b.dyn.Resource(applicationsGVR).Namespace("argocd").Create(ctx, app, metav1.CreateOptions{})
			return err
		})
		if err != nil {
			return "", fmt.Errorf("the apps of %s: %w", repo, err)
		}
	}
	_, err = benchPoll(ctx, 15*time.Minute, fmt.Sprintf("the other %d apps' Pods running", b.fill), func() bool {
		n := 0
		for _, env := range []string{"staging", "prod"} {
			pods, err := b.kube.CoreV1().Pods(releaseFillNS+"-"+env).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false
			}
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].ImageID != "" {
					n++
				}
			}
		}
		if n < b.fill {
			time.Sleep(time.Second)
		}
		return n == b.fill
	})
	if err != nil {
		return "", err
	}
	cfg.WriteString("discover:\n  - argocd: {selector: bench=release}\n")
	return cfg.String(), nil
}

// fillRepo creates repository repo: perRepo services, each a directory
// per environment pinning image, and the chain over their apps. It
// returns the commit.
func (b *releaseBench) fillRepo(ctx context.Context, repo string, k, perRepo int, image string) (string, error) {
	dir := filepath.Join(b.tmp, repo)
	var apps [2][]string
	for j := range perRepo {
		for e, env := range []string{"staging", "prod"} {
			_, name := fillApp(k, j, e)
			apps[e] = append(apps[e], name+"-"+env)
			d := filepath.Join(dir, "envs", env, name)
			if err := os.MkdirAll(d, 0o755); err != nil {
				return "", err
			}
			manifest := strings.Replace(scaleDeploymentYAML(name, image), "replicas: 3", "replicas: 1", 1)
			if err := os.WriteFile(filepath.Join(d, "deploy.yaml"), []byte(manifest), 0o644); err != nil {
				return "", err
			}
		}
	}
	chain := fmt.Sprintf(`environments:
  - name: staging
    paths: ["envs/staging/**"]
    apps: [%s]
  - name: prod
    from: staging
    paths: ["envs/prod/**"]
    apps: [%s]
`, strings.Join(apps[0], ", "), strings.Join(apps[1], ", "))
	if err := os.WriteFile(filepath.Join(dir, ".pinbot.yaml"), []byte(chain), 0o644); err != nil {
		return "", err
	}
	return b.gitea.CreateRepoFromDir(ctx, b.owner, repo, "main", dir)
}

// fillApp is the environment (e: 0 staging, 1 prod) and Deployment name
// of service j of fill repository k.
func fillApp(k, j, e int) (env, name string) {
	return []string{"staging", "prod"}[e], fmt.Sprintf("f%02d-%02d", k, j)
}

// thousands writes n with a comma between thousands: 1,002.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
