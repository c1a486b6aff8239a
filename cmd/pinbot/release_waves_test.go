package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	corev1 "k8s.io/api/core/v1"

	"pinbot.dev/pinbot/internal/testenv/browser"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/internal/testenv/stack"
)

// wavesChain is staging, then prod over four namespaces in three waves:
// the canary, eu, and the rest (two namespaces, one wave).
const wavesChain = `environments:
  - name: staging
    paths: ["envs/staging/**"]
    apps: [web-staging]
    soak: 2s
  - name: prod
    from: staging
    readyTimeout: 8s
    rollbackWindow: 10m
    waves:
      - {name: canary, paths: ["envs/prod-canary/**"], apps: [web-canary], soak: 6s}
      - {name: eu, paths: ["envs/prod-eu/**"], apps: [web-eu], soak: 2s}
      - {name: rest, paths: ["envs/prod-us1/**", "envs/prod-us2/**"], apps: [web-us1, web-us2]}
`

// wavesApps are the rig's apps, each syncing envs/NAMESPACE into its
// namespace: staging, and prod's four.
var wavesApps = [][2]string{{"web-staging", "staging"}, {"web-canary", "prod-canary"}, {"web-eu", "prod-eu"}, {"web-us1", "prod-us1"}, {"web-us2", "prod-us2"}}

// newWavesRig is a release rig whose prod rolls out in waves over four
// namespaces of the control plane, each an app of serve's.
func newWavesRig(ctx context.Context, t *testing.T) *releaseRig {
	t.Helper()
	namespaces := []string{"pinbot-system"}
	for _, a := range wavesApps {
		namespaces = append(namespaces, a[1])
	}
	r := &releaseRig{serveRig: newServeRig(ctx, t, stack.Options{Namespaces: namespaces}, nil, "s3cret"), notified: &notified{}}
	r.app, r.v1 = r.image("app", "v1")
	files := map[string]string{".pinbot.yaml": wavesChain}
	for _, a := range wavesApps {
		files["envs/"+a[1]+"/web.yaml"] = webDeployment(a[1], 1, r.app+":v1@"+r.v1)
	}
	r.commit = r.createRepo("manifests", files)
	g := r.peers.Gitea
	repo := g.RepoURL(g.AdminUser, "manifests")
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "interval: 2s\nforge: {url: %q}\napps:\n", g.URL)
	for _, a := range wavesApps {
		fmt.Fprintf(&cfg, "  - {name: %s, repo: %s, branch: main, path: envs/%s, namespace: %s, allowNamespaces: [%s], syncPolicy: {automated: true}}\n", a[0], repo, a[1], a[1], a[1])
	}
	fmt.Fprintf(&cfg, "promote:\n  - {repo: %s/manifests, images: [%s]}\n", g.AdminUser, r.app)
	r.cfg = r.write("pinbot.yaml", cfg.String())
	r.gateToken = releaseToken
	r.gateFile = r.write("gate-token", releaseToken+"\n")
	return r
}

// TestReleaseWaves: on real Gitea and the control plane, prod rolls out
// in three waves. v2, proven in staging, goes to the canary alone; the eu
// wave's pull request opens only once the canary proves v2, and its gate
// turns green only after the canary's soak; the rest's pull request
// changes both its namespaces' files and nothing else. v3 never becomes
// Ready in the canary: pinbot rolls the canary back to v2 on its own
// branch, holds v3 in the canary, eu and the rest, and opens nothing
// into eu. The leader dies after the canary proves v2: the other replica
// resumes at eu, the canary's soak kept.
func TestReleaseWaves(t *testing.T) {
	ctx := context.Background()
	r := newWavesRig(ctx, t)
	a := r.serveReleases("a")
	poll.Until(t, time.Minute, "replica a leading", func() (bool, string) { return r.holder() == "a", r.holder() })
	b := r.serveReleases("b")
	for _, env := range []string{"staging", "prod.canary", "prod.eu", "prod.rest"} {
		r.waitProven(env, r.v1, 2*time.Minute)
	}

	_, v2 := r.image("app", "v2")
	if code, out := r.pinbot("promote", "--image", r.app, "--digest", v2); code != 0 {
		t.Fatalf("promote v2: exit %d: %s", code, out)
	}
	r.merge(r.pull(r.branch("staging"), time.Minute).Index)
	r.waitProven("staging", v2, 2*time.Minute)
	canary := r.pull(r.branch("prod.canary"), time.Minute)
	if !strings.Contains(canary.Body, "envs/prod-canary/web.yaml") || strings.Contains(canary.Body, "envs/prod-eu/") {
		t.Errorf("the canary's pull request does not change the canary's file alone:\n%s", canary.Body)
	}
	if pr := r.openPull(r.branch("prod.eu")); pr != nil {
		t.Fatalf("eu's pull request #%d opened before the canary proved v2", pr.Index)
	}
	r.waitGreen(canary)
	r.merge(canary.Index)
	proven := r.waitProven("prod.canary", v2, 2*time.Minute)
	// DORA's lead time is Gitea's merge to the proof, as the ledger
	// tallies it.
	merged := r.pullsOn(r.branch("prod.canary"), sdk.StateClosed)
	if len(merged) == 0 || merged[0].Merged == nil {
		t.Fatalf("the canary's pull request is not merged: %+v", merged)
	}
	if d := r.ledger().DORA["prod.canary"]; d == nil || d.Deployments != 1 || (d.Lead-proven.ProvenSince.Sub(*merged[0].Merged)).Abs() > 2*time.Second {
		t.Errorf("the canary's DORA tally %+v; want one deployment whose lead is merge (%s) to proof (%s) within 2s", d, merged[0].Merged, proven.ProvenSince)
	}
	// The leader dies mid-rollout: the new one resumes at the wave the
	// ledger reached, with the canary's soak as it started.
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done
	poll.Until(t, time.Minute, "replica b leading", func() (bool, string) { return r.holder() == "b", r.holder() })
	eu := r.pull(r.branch("prod.eu"), time.Minute)
	soaked := proven.ProvenSince.Add(6 * time.Second)
	poll.Until(t, time.Minute, "a green gate on eu's pull request", func() (bool, string) {
		state, desc := r.gateStatus(eu.Head.Sha)
		return state == "success" && strings.Contains(desc, "proven in prod.canary"), state + ": " + desc
	})
	if green := time.Now(); green.Before(soaked) {
		t.Errorf("eu's gate went green at %s, before the canary's soak ended at %s", green.Format(time.RFC3339Nano), soaked.Format(time.RFC3339Nano))
	}
	if after := r.track("prod.canary"); after.ProvenSince == nil || !after.ProvenSince.Equal(*proven.ProvenSince) {
		t.Errorf("the canary's soak restarted over the failover: %v, then %v", proven.ProvenSince, after.ProvenSince)
	}
	if pr := r.openPull(r.branch("prod.rest")); pr != nil {
		t.Fatalf("the rest's pull request #%d opened before eu proved v2", pr.Index)
	}
	r.merge(eu.Index)
	r.waitProven("prod.eu", v2, 2*time.Minute)
	rest := r.pull(r.branch("prod.rest"), time.Minute)
	for _, f := range []string{"envs/prod-us1/web.yaml", "envs/prod-us2/web.yaml"} {
		if !strings.Contains(rest.Body, f) {
			t.Errorf("the rest's pull request does not change %s:\n%s", f, rest.Body)
		}
	}
	r.waitGreen(rest)
	r.merge(rest.Index)
	r.waitProven("prod.rest", v2, 2*time.Minute)

	// v3's Pods never become Ready in the canary.
	_, v3 := r.image("app", "v3")
	inCanary := kubeletsim.UsesImage(v3)
	r.peers.Node.FailReadiness(func(p *corev1.Pod) bool { return p.Namespace == "prod-canary" && inCanary(p) })
	defer r.peers.Node.FailReadiness(nil)
	if code, out := r.pinbot("promote", "--image", r.app, "--digest", v3); code != 0 {
		t.Fatalf("promote v3: exit %d: %s", code, out)
	}
	r.merge(r.pull(r.branch("staging"), time.Minute).Index)
	r.waitProven("staging", v3, 2*time.Minute)
	canary = r.pull(r.branch("prod.canary"), time.Minute)
	r.waitGreen(canary)
	r.merge(canary.Index)
	rb := r.pull(r.rollbackBranch("prod.canary"), 2*time.Minute)
	if !strings.Contains(rb.Body, "envs/prod-canary/web.yaml") || strings.Contains(rb.Body, "envs/prod-eu/") || !strings.Contains(rb.Body, short(v2)[len("sha256:"):]) {
		t.Errorf("the canary's rollback does not restore v2 in the canary's file alone:\n%s", rb.Body)
	}
	r.waitHeld(v3, "prod.canary", "prod.eu", "prod.rest")
	if pr := r.openPull(r.branch("prod.eu")); pr != nil {
		t.Errorf("v3 failed in the canary, and #%d opened into eu", pr.Index)
	}
	if pr := r.openPull(r.rollbackBranch("prod.eu")); pr != nil {
		t.Errorf("a rollback #%d opened into eu, which never ran v3", pr.Index)
	}

	// The release page shows each wave as a stage, in order, the canary
	// rolling back; its screenshot goes into the test's artifacts, and
	// into $PINBOT_SCREENSHOTS when set (docs/images is made that way).
	page := browser.Start(t)
	page.Open("http://"+b.addr+"/releases/"+r.peers.Gitea.AdminUser+"/manifests", `li.stage[data-env="prod.rest"]`)
	if got := page.Eval(`[...document.querySelectorAll("li.stage")].map(s => s.dataset.env).join(",")`); got != "staging,prod.canary,prod.eu,prod.rest" {
		t.Errorf("the release page's stages: %s; want staging, then prod's waves in order", got)
	}
	poll.Until(t, 30*time.Second, "the canary's stage rolling back", func() (bool, string) {
		state := page.Eval(`document.querySelector('li.stage[data-env="prod.canary"] .state').textContent.trim()`)
		return state == "Rollback open", state
	})
	page.Save(t.ArtifactDir(), "release-waves.png")
}
