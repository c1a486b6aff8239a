package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/internal/testenv/browser"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/internal/testenv/stack"
	"pinbot.dev/pinbot/release"
)

// clustersChain is staging on the hub, then prod over four clusters of
// their own in three waves: the canary (eu-1, by name), the quarter
// (eu-2) and the rest, which its selector picks by the clusters'
// Secrets' labels and which tolerates one unproven cluster.
const clustersChain = `environments:
  - name: staging
    paths: ["envs/staging/**"]
    apps: [web-staging]
    soak: 2s
  - name: prod
    from: staging
    readyTimeout: 8s
    rollbackWindow: 10m
    apps: [web-eu-1, web-eu-2, web-us-1, web-us-2]
    waves:
      - {name: canary, paths: ["envs/eu-1/**"], clusters: [eu-1], soak: 4s}
      - {name: quarter, paths: ["envs/eu-2/**"], clusters: [eu-2], soak: 2s}
      - {name: rest, paths: ["envs/us-1/**", "envs/us-2/**"], selector: {region: us}, maxUnproven: 1}
`

// spokeCluster is one of prod's clusters: its own control plane and
// node, reached through a kubeconfig Secret on the hub named after it.
type spokeCluster struct {
	name, region string
	plane        *kube.Cluster
	node         *kubeletsim.Sim
}

// startSpokes starts prod's four control planes side by side, each with
// a node and the namespace web, and writes each one's kubeconfig Secret,
// labelled with its region, into the hub's pinbot-system.
func startSpokes(ctx context.Context, t *testing.T, r *releaseRig) map[string]*spokeCluster {
	t.Helper()
	spokes := map[string]*spokeCluster{"eu-1": {region: "eu"}, "eu-2": {region: "eu"}, "us-1": {region: "us"}, "us-2": {region: "us"}}
	var wg sync.WaitGroup
	errs := make(chan error, len(spokes))
	for name, s := range spokes {
		s.name = name
		wg.Go(func() {
			plane, err := kube.Start(ctx, kube.Options{})
			if err != nil {
				errs <- fmt.Errorf("starting %s's control plane: %w", name, err)
				return
			}
			s.plane = plane
			g := r.peers.Gitea
			s.node = kubeletsim.New(plane.Config(), kubeletsim.WithNodeName(name), kubeletsim.WithBasicAuth(g.RegistryHost, g.AdminUser, g.Token))
			if err := s.node.Start(ctx); err != nil {
				errs <- fmt.Errorf("%s's node: %w", name, err)
				return
			}
			if _, err := kubernetes.NewForConfigOrDie(plane.Config()).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, s := range spokes {
			if s.node != nil {
				s.node.Stop()
			}
			if s.plane != nil {
				_ = s.plane.Stop()
			}
		}
	})
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for name, s := range spokes {
		kc, err := os.ReadFile(s.plane.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.peers.Kube.CoreV1().Secrets("pinbot-system").Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"region": s.region}},
			Data:       map[string][]byte{"value": kc},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return spokes
}

// newClustersRig is a release rig whose prod rolls out in waves over
// four control planes besides the hub.
func newClustersRig(ctx context.Context, t *testing.T) (*releaseRig, map[string]*spokeCluster) {
	t.Helper()
	r := &releaseRig{serveRig: newServeRig(ctx, t, stack.Options{Namespaces: []string{"pinbot-system", "staging"}}, nil, "s3cret"), notified: &notified{}}
	spokes := startSpokes(ctx, t, r)
	r.app, r.v1 = r.image("app", "v1")
	files := map[string]string{".pinbot.yaml": clustersChain, "envs/staging/web.yaml": webDeployment("staging", 1, r.app+":v1@"+r.v1)}
	for name := range spokes {
		files["envs/"+name+"/web.yaml"] = webDeployment("web", 1, r.app+":v1@"+r.v1)
	}
	r.commit = r.createRepo("manifests", files)
	g := r.peers.Gitea
	repo := g.RepoURL(g.AdminUser, "manifests")
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "interval: 2s\nforge: {url: %q}\napps:\n", g.URL)
	fmt.Fprintf(&cfg, "  - {name: web-staging, repo: %s, branch: main, path: envs/staging, namespace: staging, allowNamespaces: [staging], syncPolicy: {automated: true}}\n", repo)
	for _, name := range slices.Sorted(maps.Keys(spokes)) {
		fmt.Fprintf(&cfg, "  - {name: web-%s, repo: %s, branch: main, path: envs/%s, namespace: web, allowNamespaces: [web], syncPolicy: {automated: true}, cluster: {kubeConfig: {secretRef: {name: %s}}}}\n",
			name, repo, name, name)
	}
	fmt.Fprintf(&cfg, "promote:\n  - {repo: %s/manifests, images: [%s]}\n", g.AdminUser, r.app)
	r.cfg = r.write("pinbot.yaml", cfg.String())
	r.gateToken = releaseToken
	r.gateFile = r.write("gate-token", releaseToken+"\n")
	return r, spokes
}

// clusterProofs are a wave's clusters as its ledger track keeps them:
// "eu-1+" for a cluster proven (since a time), "us-2-" for one not.
func clusterProofs(t release.Track) []string {
	var out []string
	for _, c := range t.Clusters {
		mark := "-"
		if c.Proven && c.Since != nil {
			mark = "+"
		}
		out = append(out, c.Cluster+mark)
	}
	return out
}

// TestReleaseWavesOverClusters: on real Gitea and five control planes
// (the hub and four of prod's), prod rolls out in three waves that name
// their clusters: the canary by name, the quarter by name, the rest by a
// label selector over the clusters' Secrets. v2 walks the waves, each
// pull request touching its clusters' files alone and opening once the
// wave before proved v2 on its clusters; the ledger keeps since when each
// cluster proves it. us-2's new Pods never become Ready, and the rest
// still counts as proven: its maxUnproven tolerates one cluster. Then
// eu-1's node runs v2 where Git pins v3 (a stale node): the canary fails,
// its rollback opens for eu-1's file alone, v3 is held in every wave, and
// nothing opens into the quarter.
func TestReleaseWavesOverClusters(t *testing.T) {
	ctx := context.Background()
	r, spokes := newClustersRig(ctx, t)
	rep := r.serveReleases("a")
	for _, env := range []string{"staging", "prod.canary", "prod.quarter", "prod.rest"} {
		r.waitProven(env, r.v1, 2*time.Minute)
	}
	// The rest may prove v1 on us-1 before us-2's app has reported: its
	// maxUnproven tolerates one cluster. us-2 joins once it reports.
	poll.Until(t, time.Minute, "the rest's clusters, as its selector picked them: us-1 and us-2 proven", func() (bool, string) {
		got := clusterProofs(r.track("prod.rest"))
		return slices.Equal(got, []string{"us-1+", "us-2+"}), fmt.Sprint(got)
	})

	_, v2 := r.image("app", "v2")
	inUS2 := kubeletsim.UsesImage(v2)
	spokes["us-2"].node.FailReadiness(inUS2)
	defer spokes["us-2"].node.FailReadiness(nil)
	if code, out := r.pinbot("promote", "--image", r.app, "--digest", v2); code != 0 {
		t.Fatalf("promote v2: exit %d: %s", code, out)
	}
	r.merge(r.pull(r.branch("staging"), time.Minute).Index)
	r.waitProven("staging", v2, 2*time.Minute)
	for _, w := range []struct{ env, files, notFiles string }{
		{"prod.canary", "envs/eu-1/web.yaml", "envs/eu-2/"},
		{"prod.quarter", "envs/eu-2/web.yaml", "envs/us-"},
		{"prod.rest", "envs/us-1/web.yaml envs/us-2/web.yaml", "envs/eu-"},
	} {
		pull := r.pull(r.branch(w.env), 2*time.Minute)
		for _, f := range strings.Fields(w.files) {
			if !strings.Contains(pull.Body, f) || strings.Contains(pull.Body, w.notFiles) {
				t.Errorf("%s's pull request changes %s, or %s:\n%s", w.env, f, w.notFiles, pull.Body)
			}
		}
		r.waitGreen(pull)
		r.merge(pull.Index)
		proven := r.waitProven(w.env, v2, 2*time.Minute)
		if w.env == "prod.canary" && !slices.Equal(clusterProofs(proven), []string{"eu-1+"}) {
			t.Errorf("the canary's clusters: %q; want eu-1 proven", clusterProofs(proven))
		}
	}
	// The rest proved v2 with us-2 unproven: its maxUnproven is 1.
	poll.Until(t, 30*time.Second, "the rest's clusters: us-1 proven, us-2 tolerated", func() (bool, string) {
		got := clusterProofs(r.track("prod.rest"))
		return slices.Equal(got, []string{"us-1+", "us-2-"}), fmt.Sprint(got)
	})

	// eu-1's node runs v2 where Git pins v3: a stale node.
	_, v3 := r.image("app", "v3")
	if err := spokes["eu-1"].node.StaleImage(r.app, v2); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = spokes["eu-1"].node.StaleImage(r.app, "") }()
	if code, out := r.pinbot("promote", "--image", r.app, "--digest", v3); code != 0 {
		t.Fatalf("promote v3: exit %d: %s", code, out)
	}
	r.merge(r.pull(r.branch("staging"), time.Minute).Index)
	r.waitProven("staging", v3, 2*time.Minute)
	canary := r.pull(r.branch("prod.canary"), time.Minute)
	r.waitGreen(canary)
	r.merge(canary.Index)
	rb := r.pull(r.rollbackBranch("prod.canary"), 2*time.Minute)
	if !strings.Contains(rb.Body, "envs/eu-1/web.yaml") || strings.Contains(rb.Body, "envs/eu-2/") || !strings.Contains(rb.Body, "Mismatch") {
		t.Errorf("the canary's rollback does not restore eu-1's file alone, for the stale node's Mismatch:\n%s", rb.Body)
	}
	r.waitHeld(v3, "prod.canary", "prod.quarter", "prod.rest")
	if pr := r.openPull(r.branch("prod.quarter")); pr != nil {
		t.Errorf("v3 failed in the canary, and #%d opened into the quarter", pr.Index)
	}

	// The release page shows each wave's own clusters with their proof.
	page := browser.Start(t)
	page.Open("http://"+rep.addr+"/releases/"+r.peers.Gitea.AdminUser+"/manifests", `li.stage[data-env="prod.rest"] li.cluster`)
	if got := page.Eval(`[...document.querySelectorAll('li.stage[data-env="prod.rest"] li.cluster')].map(c => c.dataset.cluster + ": " + (c.querySelector(".proof")||{}).textContent).join("; ")`); !strings.Contains(got, "us-1: proven since") || !strings.Contains(got, "us-2: unproven") || strings.Contains(got, "eu-") {
		t.Errorf("the rest's clusters on the release page: %s", got)
	}
	page.Save(t.ArtifactDir(), "release-clusters.png")
}
