package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"pinbot.dev/pinbot/promote/pr"
)

func init() {
	register("waves", benchWaves)
}

// The waves measurements: staging, then prod over twenty namespaces of
// the control plane (the bench's "clusters": one control plane is what
// fits beside Gitea and serve here; docs/development.md says so) in five
// waves of 1, 2, 4, 6 and 7, each with its own soak.
const (
	wavesRounds = 2
	wavesSoak   = 5 * time.Second
	// wavesIdle is how long the bench counts Proof writes once every
	// wave proved the last digest: a minute, longer than serve's loop
	// interval.
	wavesIdle = time.Minute
)

// wavesOf are the namespaces of each wave.
var wavesOf = func() [][]string {
	var out [][]string
	n := 1
	for _, size := range []int{1, 2, 4, 6, 7} {
		var w []string
		for range size {
			w = append(w, fmt.Sprintf("c%02d", n))
			n++
		}
		out = append(out, w)
	}
	return out
}()

// benchWaves measures, per wave, the previous wave's soak end (counted
// from when every replica of its every namespace ran the digest Ready)
// to the next wave's pull request having a green pinbot/gate, and the
// proof held in the cluster to pinbot's ledger recording it.
func benchWaves(ctx context.Context, r *report) error {
	rb, done, err := startRecBench(ctx, "waves")
	defer done()
	if err != nil {
		return err
	}
	b := &releaseBench{recBench: rb}
	if err := b.setUpWaves(ctx); err != nil {
		return err
	}
	secret := filepath.Join(b.tmp, "secret")
	if err := os.WriteFile(secret, []byte("bench-waves-secret"), 0o600); err != nil {
		return err
	}
	if b.serve, err = b.startServe("waves", b.cfg, "--webhook-secret-file", secret); err != nil {
		return err
	}
	defer b.serve.stop()
	if err := b.hook(ctx, secret); err != nil {
		return err
	}
	last := waveEnv(len(wavesOf) - 1)
	if err := b.waitProvenWithin(ctx, last, refDigest(b.refs[0]), 5*time.Minute); err != nil {
		return err
	}
	var gated, noticed, proofLag []time.Duration
	pw := watchProofs(ctx, b.dyn)
	for i := 1; i <= wavesRounds; i++ {
		g, n, p, err := b.rollOut(ctx, b.refs[i], pw)
		if err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
		gated, noticed, proofLag = append(gated, g...), append(noticed, n...), append(proofLag, p...)
	}
	// Idle is once every app has seen the last merge: an app whose files
	// it did not touch sees the new head at its next poll (a minute), and
	// its Proof names the commit it proves.
	c, err := b.gitea.Client(ctx)
	if err != nil {
		return err
	}
	head, _, err := c.GetRepoBranch(b.owner, releaseRepo, "main")
	if err != nil {
		return err
	}
	if _, err := b.poll(ctx, 2*time.Minute, "every Proof at the last merge", func() bool { return pw.at(head.Commit.ID) }); err != nil {
		return err
	}
	before, changedBefore := pw.written()
	time.Sleep(wavesIdle)
	after, changed := pw.written()
	idle := after - before
	var what []string
	for k, n := range changed {
		if n -= changedBefore[k]; n > 0 {
			what = append(what, fmt.Sprintf("%s %d", k, n))
		}
	}
	slices.Sort(what)
	if len(what) == 0 {
		what = []string{"nothing"}
	}
	at := fmt.Sprintf(" (%d namespaces, %d waves)", 20, len(wavesOf))
	p50 := recMedian(gated)
	r.check("waves"+at+": previous wave's soak end → next wave's PR gate green, p50", recRound(p50).String()+" ("+recDurations(gated)+")", "≤ 2s", p50 <= 2*time.Second)
	r.info("waves"+at+": a wave's proof held in the cluster → in pinbot's ledger, p50", recRound(recMedian(noticed)).String()+" ("+recDurations(noticed)+")")
	p50 = recMedian(proofLag)
	r.check("waves"+at+": a wave's last Pod Ready → its every Proof Ready, p50", recRound(p50).String()+" ("+recDurations(proofLag)+")", "≤ 1s", p50 <= time.Second)
	r.check("waves"+at+": Proof writes in an idle minute", fmt.Sprintf("%d (21 Proofs; changed: %s)", idle, strings.Join(what, ", ")), "0", idle == 0)
	return nil
}

// waveEnv is the environment of wave i (0-based) of prod.
func waveEnv(i int) string { return fmt.Sprintf("prod.w%d", i+1) }

// setUpWaves pushes the images, creates the repository with staging and
// prod's waves on the first, and writes serve's config.
func (b *releaseBench) setUpWaves(ctx context.Context) error {
	all := []string{"staging"}
	for _, w := range wavesOf {
		all = append(all, w...)
	}
	if err := b.namespaces(ctx, all...); err != nil {
		return err
	}
	// The chart's Proof CRD: serve writes each app's Proof as it would
	// in a real cluster, and the bench times them.
	if err := b.cluster.InstallCRDs(ctx, filepath.Join("charts", "pinbot", "crds", "proofs.pinbot.dev.yaml")); err != nil {
		return err
	}
	var err error
	if b.refs, err = b.pushImages(releaseImage, wavesRounds+1); err != nil {
		return err
	}
	var chain strings.Builder
	fmt.Fprintf(&chain, "environments:\n  - name: staging\n    paths: [\"envs/staging/**\"]\n    apps: [shop-staging]\n  - name: prod\n    from: staging\n    waves:\n")
	for i, w := range wavesOf {
		var paths, apps []string
		for _, ns := range w {
			paths, apps = append(paths, fmt.Sprintf("%q", "envs/"+ns+"/**")), append(apps, "shop-"+ns)
		}
		fmt.Fprintf(&chain, "      - {name: w%d, paths: [%s], apps: [%s], soak: %s}\n", i+1, strings.Join(paths, ", "), strings.Join(apps, ", "), wavesSoak)
	}
	if err := b.gitea.CreateRepo(ctx, b.owner, releaseRepo, "main"); err != nil {
		return err
	}
	files := map[string]string{".pinbot.yaml": chain.String()}
	url := b.gitea.RepoURL(b.owner, releaseRepo)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "forge: {url: %q, tokenFile: %q}\napps:\n", b.gitea.URL, b.token)
	for _, ns := range all {
		files["envs/"+ns+"/shop.yaml"] = releaseDeployment(ns, b.refs[0])
		fmt.Fprintf(&cfg, "  - {name: shop-%s, repo: %s, branch: main, path: envs/%s, namespace: %s, allowNamespaces: [%s], syncPolicy: {automated: true}}\n", ns, url, ns, ns, ns)
	}
	fmt.Fprintf(&cfg, "promote:\n  - {repo: %s/%s, images: [%s]}\n", b.owner, releaseRepo, b.repository())
	if _, err := b.push(ctx, releaseRepo, files); err != nil {
		return err
	}
	b.cfg = filepath.Join(b.tmp, "waves.yaml")
	return os.WriteFile(b.cfg, []byte(cfg.String()), 0o600)
}

// rollOut promotes ref into staging as CI would and merges each pull
// request as it opens, wave after wave. It returns, for each wave after
// the first, how long after the previous wave's soak ended its pull
// request's gate went green, and for each wave how long pinbot took to
// record the proof the cluster held.
func (b *releaseBench) rollOut(ctx context.Context, ref string, pw *proofWatch) (gated, noticed, proofLag []time.Duration, err error) {
	digest := refDigest(ref)
	if err := b.promote(ctx, ref); err != nil {
		return nil, nil, nil, err
	}
	pull, err := b.waitPull(ctx, pr.Branch("pinbot/", "staging", b.repository()), digest, time.Minute)
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := b.gitea.MergePull(ctx, b.owner, releaseRepo, pull.Index); err != nil {
		return nil, nil, nil, err
	}
	var soaked, ledgerSoaked time.Time // when the previous wave's soak ended: by the cluster, by the ledger
	for i, w := range wavesOf {
		env := waveEnv(i)
		next, err := b.waitPull(ctx, pr.Branch("pinbot/", env, b.repository()), digest, 2*time.Minute)
		if err != nil {
			return nil, nil, nil, err
		}
		if err := b.waitGate(ctx, next, "success", time.Minute); err != nil {
			return nil, nil, nil, err
		}
		if i > 0 {
			green := time.Now()
			if green.Before(ledgerSoaked) {
				return nil, nil, nil, fmt.Errorf("%s's gate went green at %s, before the previous wave's soak ended at %s", env, green.Format(time.RFC3339Nano), ledgerSoaked.Format(time.RFC3339Nano))
			}
			gated = append(gated, green.Sub(soaked))
		}
		if _, err := b.gitea.MergePull(ctx, b.owner, releaseRepo, next.Index); err != nil {
			return nil, nil, nil, err
		}
		var held time.Time
		if _, err := b.poll(ctx, 2*time.Minute, env+" running "+digest[:19], func() bool {
			for _, ns := range w {
				if !b.running(ctx, ns, digest) {
					return false
				}
			}
			held = time.Now()
			return true
		}); err != nil {
			return nil, nil, nil, err
		}
		if err := b.waitProven(ctx, env, digest); err != nil {
			return nil, nil, nil, err
		}
		t := b.track(ctx, env)
		if t.ProvenSince == nil {
			return nil, nil, nil, errors.New(env + " proven without a time")
		}
		noticed = append(noticed, max(t.ProvenSince.Sub(held), 0))
		if _, err := b.poll(ctx, time.Minute, env+"'s Proofs Ready for "+digest[:19], func() bool { _, ok := pw.ready(w, digest); return ok }); err != nil {
			return nil, nil, nil, err
		}
		at, _ := pw.ready(w, digest)
		proofLag = append(proofLag, max(at.Sub(held), 0))
		soaked, ledgerSoaked = held.Add(wavesSoak), t.ProvenSince.Add(wavesSoak)
	}
	return gated, noticed, proofLag, nil
}
