package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/promote/pr"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/store"
)

func init() {
	register("release", func(ctx context.Context, r *report) error { return benchRelease(ctx, r, 0) })
	register("release-scale", func(ctx context.Context, r *report) error { return benchRelease(ctx, r, releaseFillApps) })
	// The same with the fleet's ten thousand apps loaded: long, so only
	// when named (make bench-scale).
	registerByName("release-10k", func(ctx context.Context, r *report) error { return benchRelease(ctx, r, fleetOf10k.apps) })
}

// The release measurements: one repository with staging then prod, two
// replicas each. serve looks at each chain at its default interval, 15 s:
// what the figures time comes from deadlines and proofs, not polls.
const (
	releaseRounds   = 3
	releaseReplicas = 2
	releaseSoak     = 8 * time.Second // longer than Gitea takes to open a pull request on a busy machine; real soaks are minutes
	releaseReady    = 5 * time.Second
	releaseRepo     = "release"
	releaseImage    = "shop"
)

// releaseBench is one run's chain: the peers, the pinned references
// (repo:tag@digest) pushed for it, serve's config and the serve child.
type releaseBench struct {
	*recBench
	refs  []string
	cfg   string
	serve *serveChild
	// fill is how many other apps serve runs besides the chain measured
	// (release_scale.go), in chains of their own.
	fill int
}

// benchRelease measures the targets of issue 21: from the upstream proof
// completing its soak to the downstream pull request being open, and from
// a failing proof's deadline to the rollback pull request being open. The
// proof's start is what the bench itself sees in the cluster (every
// replica Ready on the digest, no other Pod), so pinbot's own lag in
// noticing it counts against pinbot. With fill, serve also runs that many
// other apps in chains of their own, which must not slow the one measured.
func benchRelease(ctx context.Context, r *report, fill int) error {
	rb, done, err := startRecBench(ctx, "release")
	defer done()
	if err != nil {
		return err
	}
	b, tmp := &releaseBench{recBench: rb, fill: fill}, rb.tmp
	if err := b.setUp(ctx); err != nil {
		return err
	}
	secret := filepath.Join(tmp, "secret")
	if err := os.WriteFile(secret, []byte("bench-release-secret"), 0o600); err != nil {
		return err
	}
	if b.serve, err = b.startServe("release", b.cfg, "--webhook-secret-file", secret); err != nil {
		return err
	}
	defer b.serve.stop()
	if err := b.hook(ctx, secret); err != nil {
		return err
	}
	// The first proof waits for serve's first passes of every app: a
	// minute more per thousand apps loaded.
	if err := b.waitProvenWithin(ctx, "prod", refDigest(b.refs[0]), 3*time.Minute+time.Duration(fill/1000)*time.Minute); err != nil {
		return err
	}

	var onward, opened, noticed []time.Duration
	for i := 1; i <= releaseRounds; i++ {
		late, open, lag, err := b.onward(ctx, b.refs[i])
		if err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
		onward, opened, noticed = append(onward, late), append(opened, open), append(noticed, lag)
	}
	at := fmt.Sprintf(" (%s apps)", thousands(2+fill))
	p50 := recMedian(onward)
	r.check("release"+at+": soak complete upstream → downstream PR's gate green, p50", recRound(p50).String()+" ("+recDurations(onward)+")", "≤ 2s", p50 <= 2*time.Second)
	r.info("release"+at+": proof held in the cluster → downstream PR open (gate pending while it soaks), p50", recRound(recMedian(opened)).String()+" ("+recDurations(opened)+")")
	r.info("release"+at+": proof held in the cluster → in pinbot's ledger, p50", recRound(recMedian(noticed)).String()+" ("+recDurations(noticed)+")")

	var rollback []time.Duration
	bad := b.refs[releaseRounds+1:]
	for i, fail := range []func(kubeletsim.PodMatcher){b.node.FailReadiness, b.node.CrashLoop} {
		late, err := b.rollback(ctx, bad[i], fail)
		if err != nil {
			return fmt.Errorf("rollback %d: %w", i+1, err)
		}
		rollback = append(rollback, late)
	}
	worst := max(rollback[0], rollback[1])
	r.check("release"+at+": failing proof's deadline → rollback PR open, worst", recRound(worst).String()+" (never Ready "+recRound(rollback[0]).String()+", crash loop "+recRound(rollback[1]).String()+")", "≤ 5s", worst <= 5*time.Second)
	mid := recMedian(rollback)
	r.check("release"+at+": failing proof's deadline → rollback PR open, p50", recRound(mid).String(), "≤ 2s", mid <= 2*time.Second)

	// What Gitea itself takes to push a branch and open a pull request:
	// the part of the rollback's figure no pinbot change can remove.
	floor, open, err := b.releaseFloor(ctx, 3)
	if err != nil {
		return fmt.Errorf("the Gitea floor: %w", err)
	}
	f50 := recMedian(floor)
	r.info("release"+at+": Gitea's floor, the API call opening a PR alone, p50", recRound(recMedian(open)).String()+" ("+recDurations(open)+")")
	r.info("release"+at+": Gitea's floor, git push of a branch + one API call opening its PR, p50", recRound(f50).String()+" ("+recDurations(floor)+")")
	r.info("release"+at+": rollback PR p50 over Gitea's floor", fmt.Sprintf("%.2fx", float64(mid)/float64(f50)))
	return nil
}

// setUp pushes the images, creates the repository with both environments
// on the first, and writes serve's config.
func (b *releaseBench) setUp(ctx context.Context) error {
	if err := b.namespaces(ctx, "staging", "prod"); err != nil {
		return err
	}
	var err error
	if b.refs, err = b.pushImages(releaseImage, releaseRounds+3); err != nil {
		return err
	}
	chain := fmt.Sprintf(`environments:
  - name: staging
    paths: ["envs/staging/**"]
    apps: [shop-staging]
    soak: %s
  - name: prod
    from: staging
    paths: ["envs/prod/**"]
    apps: [shop-prod]
    readyTimeout: %s
`, releaseSoak, releaseReady)
	if err := b.gitea.CreateRepo(ctx, b.owner, releaseRepo, "main"); err != nil {
		return err
	}
	if _, err := b.push(ctx, releaseRepo, map[string]string{
		".pinbot.yaml":           chain,
		"envs/staging/shop.yaml": releaseDeployment("staging", b.refs[0]),
		"envs/prod/shop.yaml":    releaseDeployment("prod", b.refs[0]),
	}); err != nil {
		return err
	}
	url := b.gitea.RepoURL(b.owner, releaseRepo)
	cfg := fmt.Sprintf(`# merges arrive by webhook (hook); each app's branch is polled every minute
forge: {url: %q, tokenFile: %q}
apps:
  - {name: shop-staging, repo: %s, branch: main, path: envs/staging, namespace: staging, allowNamespaces: [staging], syncPolicy: {automated: true}}
  - {name: shop-prod, repo: %s, branch: main, path: envs/prod, namespace: prod, allowNamespaces: [prod], syncPolicy: {automated: true}}
promote:
  - {repo: %s/%s, images: [%s]}
`, b.gitea.URL, b.token, url, url, b.owner, releaseRepo, b.repository())
	if b.fill > 0 {
		more, err := b.setUpFill(ctx)
		if err != nil {
			return fmt.Errorf("the other %d apps: %w", b.fill, err)
		}
		cfg += more
	}
	b.cfg = filepath.Join(b.tmp, "release.yaml")
	return os.WriteFile(b.cfg, []byte(cfg), 0o600)
}

// onward promotes ref into staging as CI would and merges it, then
// returns how long after the soak's end (counted from when every staging
// replica ran it Ready) prod's pull request for it had a green gate, how
// long after the proof it was open, and how long pinbot took to record
// the proof. It merges prod's pull request and waits for prod's proof, so
// that prod has a last proven digest.
func (b *releaseBench) onward(ctx context.Context, ref string) (late, opened, noticed time.Duration, err error) {
	digest := refDigest(ref)
	if err := b.promote(ctx, ref); err != nil {
		return 0, 0, 0, err
	}
	pull, err := b.waitPull(ctx, pr.Branch("pinbot/", "staging", b.repository()), digest, time.Minute)
	if err != nil {
		return 0, 0, 0, err
	}
	if _, err := b.gitea.MergePull(ctx, b.owner, releaseRepo, pull.Index); err != nil {
		return 0, 0, 0, err
	}
	var held time.Time
	if _, err := b.poll(ctx, 2*time.Minute, "staging running "+digest[:19], func() bool {
		ok := b.running(ctx, "staging", digest)
		if ok {
			held = time.Now()
		}
		return ok
	}); err != nil {
		return 0, 0, 0, err
	}
	prod, err := b.waitPull(ctx, pr.Branch("pinbot/", "prod", b.repository()), digest, 2*time.Minute)
	if err != nil {
		return 0, 0, 0, err
	}
	opened = time.Since(held)
	if err := b.waitGate(ctx, prod, "success", time.Minute); err != nil {
		return 0, 0, 0, err
	}
	green := time.Now()
	t := b.track(ctx, "staging")
	if t.ProvenSince == nil {
		return 0, 0, 0, errors.New("prod's gate went green while the ledger has no proof for staging")
	}
	if green.Before(t.ProvenSince.Add(releaseSoak)) {
		return 0, 0, 0, fmt.Errorf("prod's gate went green at %s, before staging's soak ended at %s", green.Format(time.RFC3339Nano), t.ProvenSince.Add(releaseSoak).Format(time.RFC3339Nano))
	}
	if _, err := b.gitea.MergePull(ctx, b.owner, releaseRepo, prod.Index); err != nil {
		return 0, 0, 0, err
	}
	if err := b.waitProven(ctx, "prod", digest); err != nil {
		return 0, 0, 0, err
	}
	return green.Sub(held.Add(releaseSoak)), opened, t.ProvenSince.Sub(held), nil
}

// hook points the repository's push webhook at serve, as an install
// does: a merge syncs at once, and serve polls each app's branch only
// every minute (the default interval).
func (b *releaseBench) hook(ctx context.Context, secretFile string) error {
	secret, err := os.ReadFile(secretFile)
	if err != nil {
		return err
	}
	c, err := b.gitea.Client(ctx)
	if err != nil {
		return err
	}
	_, _, err = c.CreateRepoHook(b.owner, releaseRepo, sdk.CreateHookOption{
		Type:   sdk.HookTypeGitea,
		Config: map[string]string{"url": "http://" + b.serve.addr + "/webhook/gitea", "content_type": "json", "secret": string(secret)},
		Events: []string{"push"},
		Active: true,
	})
	return err
}

// waitGate polls the pinbot/gate status of pr's head until it is state.
func (b *releaseBench) waitGate(ctx context.Context, pull *sdk.PullRequest, state string, within time.Duration) error {
	c, err := b.gitea.Client(ctx)
	if err != nil {
		return err
	}
	last := "none"
	_, err = b.poll(ctx, within, "pinbot/gate "+state+" on #"+fmt.Sprint(pull.Index), func() bool {
		combined, _, err := c.GetCombinedStatus(b.owner, releaseRepo, pull.Head.Sha)
		if err != nil {
			time.Sleep(15 * time.Millisecond)
			return false
		}
		for _, st := range combined.Statuses { // the newest of each context
			if st.Context == release.PullContext {
				last = string(st.State) + ": " + st.Description
				return string(st.State) == state
			}
		}
		time.Sleep(15 * time.Millisecond)
		return false
	})
	if err != nil {
		return fmt.Errorf("%w (last: %s)", err, last)
	}
	return nil
}

// rollback makes ref's Pods fail with fail, forces ref into prod and
// merges it, and returns how long after the deadline (the merge plus
// readyTimeout) the rollback pull request was open. It merges the
// rollback and waits for prod to run the last proven digest again.
func (b *releaseBench) rollback(ctx context.Context, ref string, fail func(kubeletsim.PodMatcher)) (time.Duration, error) {
	digest := refDigest(ref)
	fail(kubeletsim.UsesImage(digest))
	if err := b.promote(ctx, ref, "--env", "prod", "--force", "--reason", "bench: a bad release"); err != nil {
		return 0, err
	}
	pull, err := b.waitPull(ctx, pr.ForcedBranch("pinbot/", "prod", b.repository()), digest, time.Minute)
	if err != nil {
		return 0, err
	}
	last := b.track(ctx, "prod").LastProven
	if _, err := b.gitea.MergePull(ctx, b.owner, releaseRepo, pull.Index); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(releaseReady)
	rb, err := b.waitPull(ctx, pr.RollbackBranch("pinbot/", "prod", b.repository()), last, 2*time.Minute)
	if err != nil {
		return 0, err
	}
	late := time.Since(deadline)
	if _, err := b.gitea.MergePull(ctx, b.owner, releaseRepo, rb.Index); err != nil {
		return 0, err
	}
	return late, b.waitProven(ctx, "prod", last)
}

// poll is benchPoll that gives up as soon as serve exits, with its log.
func (b *releaseBench) poll(ctx context.Context, within time.Duration, what string, cond func() bool) (time.Duration, error) {
	exited := false
	took, err := benchPoll(ctx, within, what, func() bool {
		select {
		case <-b.serve.exited:
			exited = true
			return true
		default:
			return cond()
		}
	})
	if exited {
		return 0, fmt.Errorf("%s: %w", what, b.serve.failure())
	}
	return took, err
}

// promote runs pinbot promote of ref with extra flags.
func (b *releaseBench) promote(ctx context.Context, ref string, extra ...string) error {
	at := strings.LastIndex(ref, "@")
	args := append([]string{"promote", "--image", ref[:at], "--digest", ref[at+1:],
		"--forge-url", b.gitea.URL, "--repo", b.owner + "/" + releaseRepo, "--token-file", b.token,
		"--cache-dir", filepath.Join(b.tmp, "promote-cache"), "--kubeconfig", b.cluster.Kubeconfig}, extra...)
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+b.docker)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pinbot %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// waitPull waits, polling every 20ms, for the open pull request on branch
// whose body names digest.
func (b *releaseBench) waitPull(ctx context.Context, branch, digest string, within time.Duration) (*sdk.PullRequest, error) {
	c, err := b.gitea.Client(ctx)
	if err != nil {
		return nil, err
	}
	var found *sdk.PullRequest
	_, err = b.poll(ctx, within, "an open pull request on "+branch+" for "+digest[:19], func() bool {
		prs, _, err := c.ListRepoPullRequests(b.owner, releaseRepo, sdk.ListPullRequestsOptions{State: sdk.StateOpen})
		for _, pull := range prs {
			if err == nil && pull.Head != nil && pull.Head.Ref == branch && strings.Contains(pull.Body, digest) {
				found = pull
				return true
			}
		}
		time.Sleep(15 * time.Millisecond)
		return false
	})
	return found, err
}

// running reports whether every Pod of env's Deployment is Ready and runs
// digest, with exactly the replicas wanted: the proof as the cluster has it.
func (b *releaseBench) running(ctx context.Context, env, digest string) bool {
	pods, err := b.kube.CoreV1().Pods(env).List(ctx, metav1.ListOptions{LabelSelector: "app=shop"})
	if err != nil || len(pods.Items) != releaseReplicas {
		time.Sleep(15 * time.Millisecond)
		return false
	}
	for _, p := range pods.Items {
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		if !ready || p.DeletionTimestamp != nil || len(p.Status.ContainerStatuses) != 1 || !strings.HasSuffix(p.Status.ContainerStatuses[0].ImageID, digest) {
			time.Sleep(15 * time.Millisecond)
			return false
		}
	}
	return true
}

// waitProven waits for pinbot's ledger to hold env proven on digest.
func (b *releaseBench) waitProven(ctx context.Context, env, digest string) error {
	return b.waitProvenWithin(ctx, env, digest, 3*time.Minute)
}

// waitProvenWithin is waitProven for at most limit.
func (b *releaseBench) waitProvenWithin(ctx context.Context, env, digest string, limit time.Duration) error {
	_, err := b.poll(ctx, limit, env+" proven on "+digest[:19], func() bool {
		time.Sleep(50 * time.Millisecond)
		return b.track(ctx, env).Proven == digest
	})
	return err
}

// track is the image's track in env, as serve stored it.
func (b *releaseBench) track(ctx context.Context, env string) release.Track {
	l, _, err := store.New(b.kube, "pinbot-system").Get(ctx, b.owner+"/"+releaseRepo)
	if err != nil {
		return release.Track{}
	}
	if t := l.Lookup(env, b.repository()); t != nil {
		return *t
	}
	return release.Track{}
}

// repository is the image's repository in the registry.
func (b *releaseBench) repository() string {
	return b.gitea.RegistryHost + "/" + b.owner + "/" + releaseImage
}

// releaseDeployment is Deployment shop in ns on image, rolled out one
// surge Pod at a time.
func releaseDeployment(ns, image string) string {
	return strings.Replace(recDeployment("shop", releaseReplicas, image), "  name: shop\n", "  name: shop\n  namespace: "+ns+"\n", 1)
}

// refDigest is the digest of a pinned reference repo:tag@digest.
func refDigest(ref string) string { return ref[strings.LastIndex(ref, "@")+1:] }

// byDigest is a pinned reference repo:tag@digest as repo@digest.
func byDigest(ref string) string {
	tagged, digest, _ := strings.Cut(ref, "@")
	return tagged[:strings.LastIndex(tagged, ":")] + "@" + digest
}
