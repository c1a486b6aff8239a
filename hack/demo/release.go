package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/promote/pr"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/store"
)

const releases = "releases"

// releaseChain shows the proof deciding a release: a repository with
// staging then prod, pinbot serve watching both; CI promotes v2 into
// staging, a reviewer merges, staging proves it, and pinbot opens prod's
// pull request itself, with staging's proof and its gate pending until the
// soak completes. Then a bad release (its Pods never get Ready) is forced
// into prod and merged: pinbot holds it and opens the rollback to the last
// proven digest, which a reviewer merges; prod runs v2 again, proven.
func (d *demo) releaseChain(ctx context.Context) error {
	if d.cluster == nil || d.node == nil {
		return errors.New("the release step needs the cluster half to have run")
	}
	banner("Environments: the proof decides the release")
	cs, err := kubernetes.NewForConfig(d.cluster.Config())
	if err != nil {
		return err
	}
	for _, ns := range []string{"staging", "prod"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s: %w", ns, err)
		}
	}
	v1, err := d.build(ctx, "shop", "v1", "1.0.0")
	if err != nil {
		return err
	}
	chain := `environments:
  - name: staging
    paths: ["envs/staging/**"]
    apps: [shop-staging]
    soak: 5s
  - name: prod
    from: staging
    paths: ["envs/prod/**"]
    apps: [shop-prod]
    readyTimeout: 10s
`
	tree := filepath.Join(d.dir, "releases")
	for p, body := range map[string]string{
		".pinbot.yaml":           chain,
		"envs/staging/shop.yaml": shopDeployment("staging", v1.pinned()),
		"envs/prod/shop.yaml":    shopDeployment("prod", v1.pinned()),
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(tree, p)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tree, p), []byte(body), 0o644); err != nil {
			return err
		}
	}
	if _, err := d.gitea.CreateRepoFromDir(ctx, owner, releases, "main", tree); err != nil {
		return err
	}
	fmt.Printf("repository %s/%s, .pinbot.yaml:\n%s", owner, releases, chain)

	config := filepath.Join(d.dir, "release.yaml")
	url := d.gitea.RepoURL(owner, releases)
	body := fmt.Sprintf(`interval: 2s
forge: {url: %q, tokenFile: %q}
apps:
  - {name: shop-staging, repo: %s, branch: main, path: envs/staging, namespace: staging, allowNamespaces: [staging], syncPolicy: {automated: true}}
  - {name: shop-prod, repo: %s, branch: main, path: envs/prod, namespace: prod, allowNamespaces: [prod], syncPolicy: {automated: true}}
promote:
  - {repo: %s/%s, images: [%s]}
`, d.gitea.URL, d.token, url, url, owner, releases, v1.repo)
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		return err
	}
	d.ran.apps = append(d.ran.apps,
		fmt.Sprintf("{name: shop-staging, repo: %s, branch: main, path: envs/staging, namespace: staging, allowNamespaces: [staging], syncPolicy: {automated: true}}", url),
		fmt.Sprintf("{name: shop-prod, repo: %s, branch: main, path: envs/prod, namespace: prod, allowNamespaces: [prod], syncPolicy: {automated: true}}", url))
	d.ran.promote = append(d.ran.promote, fmt.Sprintf("{repo: %s/%s, images: [%s]}", owner, releases, v1.repo))
	srv, err := d.startServe(ctx, "release-serve", config, "--release-interval", "1s")
	if err != nil {
		return err
	}
	defer srv.stop()
	// serve writes the ledger at its first look at the repository; CI's
	// promote reads it.
	if err := d.waitLedger(ctx, cs, "it was written", time.Minute, func(*release.Ledger) bool { return true }); err != nil {
		return err
	}

	// --kubeconfig: promote reads the release chain's ledger (holds, proofs)
	// from the cluster, as CI does without serve's gate endpoint.
	forge := []string{"--forge-url", d.gitea.URL, "--repo", owner + "/" + releases, "--token-file", d.token, "--kubeconfig", d.kubeconfig}
	v2, err := d.build(ctx, "shop", "v2", "1.1.0")
	if err != nil {
		return err
	}
	banner("CI promotes shop v2: it goes to staging, the first environment")
	if _, err := d.run(ctx, append([]string{"promote", "--image", v2.repo + ":v2", "--digest", v2.digest}, forge...)...); err != nil {
		return err
	}
	staging, err := d.waitPull(ctx, pr.Branch("pinbot/", "staging", v2.repo), time.Minute)
	if err != nil {
		return err
	}
	if _, err := d.gitea.MergePull(ctx, owner, releases, staging.Index); err != nil {
		return err
	}
	fmt.Printf("a reviewer merged #%d; staging syncs, proves v2 and soaks it for 5s\n", staging.Index)
	prod, err := d.waitPull(ctx, pr.Branch("pinbot/", "prod", v2.repo), 3*time.Minute)
	if err != nil {
		return err
	}
	banner(fmt.Sprintf("pinbot opened prod's pull request #%d itself, with staging's proof", prod.Index))
	fmt.Println(section(prod.Body, "### Proven in staging"))
	soaking, err := d.waitGate(ctx, prod, "pending", time.Minute)
	if err != nil {
		return err
	}
	fmt.Printf("pinbot/gate on #%d: %s\n", prod.Index, soaking)
	green, err := d.waitGate(ctx, prod, "success", time.Minute)
	if err != nil {
		return err
	}
	fmt.Printf("pinbot/gate on #%d: %s\n", prod.Index, green)
	if _, err := d.gitea.MergePull(ctx, owner, releases, prod.Index); err != nil {
		return err
	}
	fmt.Printf("a reviewer merged #%d into prod\n", prod.Index)
	// What fails next rolls back to the last digest proven in prod.
	if err := d.waitProven(ctx, cs, v2.repo, v2.digest, 3*time.Minute); err != nil {
		return err
	}
	fmt.Println("prod proves v2")

	banner("A bad release: v3's Pods never get Ready; it is forced into prod and merged")
	v3, err := d.build(ctx, "shop", "v3", "1.2.0")
	if err != nil {
		return err
	}
	d.node.FailReadiness(kubeletsim.UsesImage(v3.digest))
	if _, err := d.run(ctx, append([]string{"promote", "--env", "prod", "--force", "--reason", "demo: skip staging", "--image", v3.repo + ":v3", "--digest", v3.digest}, forge...)...); err != nil {
		return err
	}
	bad, err := d.waitPull(ctx, pr.ForcedBranch("pinbot/", "prod", v3.repo), time.Minute)
	if err != nil {
		return err
	}
	if _, err := d.gitea.MergePull(ctx, owner, releases, bad.Index); err != nil {
		return err
	}
	rb, err := d.waitPull(ctx, pr.RollbackBranch("pinbot/", "prod", v3.repo), 3*time.Minute)
	if err != nil {
		return err
	}
	banner(fmt.Sprintf("pinbot opened the rollback: pull request #%d, %s", rb.Index, rb.Title))
	fmt.Println(section(rb.Body, "### Why"))
	// serve writes the ledger once its step's actions are done, just
	// after the pull request opens.
	if err := d.waitHeld(ctx, cs, v3.repo, v3.digest, time.Minute); err != nil {
		return err
	}
	if _, err := d.run(ctx, "hold", "list", "--config", config, "--kubeconfig", d.kubeconfig); err != nil {
		return err
	}
	if _, err := d.gitea.MergePull(ctx, owner, releases, rb.Index); err != nil {
		return err
	}
	fmt.Printf("a reviewer merged the rollback #%d: prod goes back to v2, and v3 stays held (its Pods still never get Ready)\n", rb.Index)
	if err := d.waitProven(ctx, cs, v2.repo, v2.digest, 3*time.Minute); err != nil {
		return err
	}
	banner("prod runs v2 again, proven; v3 is held")
	_, err = d.run(ctx, "ledger", "--config", config, "--kubeconfig", d.kubeconfig)
	return err
}

// waitHeld waits for serve's ledger to hold digest of image in prod.
func (d *demo) waitHeld(ctx context.Context, cs kubernetes.Interface, image, digest string, within time.Duration) error {
	return d.waitLedger(ctx, cs, imageref.Short(digest)+" held in prod", within, func(l *release.Ledger) bool { return l.Held("prod", image, digest) != nil })
}

// waitProven waits for serve's ledger to say prod runs digest of image,
// proven.
func (d *demo) waitProven(ctx context.Context, cs kubernetes.Interface, image, digest string, within time.Duration) error {
	return d.waitLedger(ctx, cs, imageref.Short(digest)+" proven in prod", within, func(l *release.Ledger) bool {
		t := l.Lookup("prod", image)
		return t != nil && t.Proven == digest
	})
}

// waitLedger waits for the releases repository's ledger to be what ok
// says (what, in words).
func (d *demo) waitLedger(ctx context.Context, cs kubernetes.Interface, what string, within time.Duration, ok func(*release.Ledger) bool) error {
	ledgers := store.New(cs, "pinbot-system")
	for deadline := time.Now().Add(within); ; {
		// Get reads a ledger never written as empty; the ConfigMap says
		// whether serve wrote it.
		_, err := cs.CoreV1().ConfigMaps("pinbot-system").Get(ctx, store.Name(owner+"/"+releases), metav1.GetOptions{})
		if err == nil {
			var l *release.Ledger
			if l, _, err = ledgers.Get(ctx, owner+"/"+releases); err == nil && ok(l) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the ledger does not say %s within %s (see the serve log)", what, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitPull waits for the open pull request on branch of the releases
// repository.
// waitGate waits for the pinbot/gate status of pr's head to be state (or
// to have been: a short soak may end between two looks) and returns it as
// "state: description".
func (d *demo) waitGate(ctx context.Context, pr *sdk.PullRequest, state string, within time.Duration) (string, error) {
	deadline := time.Now().Add(within)
	for {
		c, err := d.gitea.Client(ctx)
		if err != nil {
			return "", err
		}
		sts, _, err := c.ListStatuses(owner, releases, pr.Head.Sha, sdk.ListStatusesOption{})
		if err == nil {
			for _, st := range sts {
				if st.Context == release.PullContext && string(st.State) == state {
					return state + ": " + st.Description, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no %s pinbot/gate on #%d within %s (see the serve log)", state, pr.Index, within)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (d *demo) waitPull(ctx context.Context, branch string, within time.Duration) (*sdk.PullRequest, error) {
	deadline := time.Now().Add(within)
	for {
		c, err := d.gitea.Client(ctx)
		if err != nil {
			return nil, err
		}
		prs, _, err := c.ListRepoPullRequests(owner, releases, sdk.ListPullRequestsOptions{State: sdk.StateOpen})
		if err == nil {
			for _, pr := range prs {
				if pr.Head != nil && pr.Head.Ref == branch {
					return pr, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no pull request on %s within %s (see the serve log)", branch, within)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// section is the part of a Markdown body from heading to the next one.
func section(body, heading string) string {
	i := strings.Index(body, heading)
	if i < 0 {
		return body
	}
	rest := body[i:]
	if j := strings.Index(rest[len(heading):], "\n### "); j >= 0 {
		rest = rest[:len(heading)+j]
	}
	return strings.TrimSpace(rest)
}

func shopDeployment(ns, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: shop, namespace: %s}
spec:
  replicas: 2
  strategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 0, maxSurge: 1}}
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      containers:
        - name: shop
          image: %s
`, ns, image)
}
