package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	corev1 "k8s.io/api/core/v1"

	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/internal/testenv/stack"
	"pinbot.dev/pinbot/promote/pr"
)

// groupChain: prod takes app and api from staging together.
const groupChain = twoEnvs + `    readyTimeout: 8s
    rollbackWindow: 10m
    together: [[app, api]]
`

// TestReleaseGroup: two images, app and api, that prod takes together.
// CI promotes each into staging; once staging proves both, pinbot opens
// one pull request into prod with both digests, in one commit, its gate
// green after the soak. Merged, api crash-loops in prod: both go back to
// v1 in one rollback pull request, and both v2 digests are held there,
// app's too though it ran well.
func TestReleaseGroup(t *testing.T) {
	ctx := context.Background()
	r := &releaseRig{serveRig: newServeRig(ctx, t, stack.Options{Namespaces: []string{"pinbot-system", "staging", "prod"}}, nil, "s3cret")}
	r.app, r.v1 = r.image("app", "v1")
	api, apiV1 := r.image("api", "v1")
	asAPI := strings.NewReplacer("name: web", "name: api", "app: web", "app: api")
	r.commit = r.createRepo("manifests", map[string]string{
		".pinbot.yaml":          groupChain,
		"envs/staging/web.yaml": webDeployment("staging", 1, r.app+":v1@"+r.v1),
		"envs/staging/api.yaml": asAPI.Replace(webDeployment("staging", 1, api+":v1@"+apiV1)),
		"envs/prod/web.yaml":    webDeployment("prod", 1, r.app+":v1@"+r.v1),
		"envs/prod/api.yaml":    asAPI.Replace(webDeployment("prod", 1, api+":v1@"+apiV1)),
	})
	g := r.peers.Gitea
	repo := g.RepoURL(g.AdminUser, "manifests")
	r.cfg = r.write("pinbot.yaml", fmt.Sprintf(`interval: 2s
forge: {url: %q}
apps:
  - {name: web-staging, repo: %s, branch: main, path: envs/staging, namespace: staging, allowNamespaces: [staging], syncPolicy: {automated: true}}
  - {name: web-prod, repo: %s, branch: main, path: envs/prod, namespace: prod, allowNamespaces: [prod], syncPolicy: {automated: true}}
promote:
  - {repo: %s/manifests, images: [%s, %s]}
`, g.URL, repo, repo, g.AdminUser, r.app, api))
	r.gateToken, r.gateFile = releaseToken, r.write("gate-token", releaseToken+"\n")
	rep := r.serveReleases("a")
	gateArgs := []string{"--gate-url", "http://" + rep.addr, "--gate-token-file", r.gateFile}
	r.waitProven("prod", r.v1, 2*time.Minute)

	_, appV2 := r.image("app", "v2")
	_, apiV2 := r.image("api", "v2")
	for _, in := range [][2]string{{r.app, appV2}, {api, apiV2}} {
		if code, out := r.pinbot(append([]string{"promote", "--image", in[0], "--digest", in[1]}, gateArgs...)...); code != 0 {
			t.Fatalf("promote %s: exit %d: %s", in[0], code, out)
		}
		r.merge(r.pull(pr.Branch("pinbot/", "staging", in[0]), time.Minute).Index)
	}
	r.waitProven("staging", appV2, 2*time.Minute)
	poll.Until(t, 2*time.Minute, "api v2 proven in staging", func() (bool, string) {
		return r.ledger().Lookup("staging", api).Proven == apiV2, r.ledgerSummary()
	})

	// One pull request into prod, with both digests in one commit. (When
	// staging proved app v2 before api v2, it proposed that set first, then
	// moved the pull request on to both.)
	branch := pr.TogetherBranch("pinbot/", "prod", "app+api")
	c, err := g.Client(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, time.Minute, "one pull request into prod changing both images", func() (bool, string) {
		p := r.openPull(branch)
		if p == nil {
			return false, "no pull request on " + branch
		}
		files, _, err := c.ListPullRequestFiles(g.AdminUser, "manifests", p.Index, sdk.ListPullRequestFilesOptions{})
		if err != nil {
			return false, err.Error()
		}
		var changed []string
		for _, f := range files {
			changed = append(changed, f.Filename)
		}
		commits, _, err := c.ListPullRequestCommits(g.AdminUser, "manifests", p.Index, sdk.ListPullRequestCommitsOptions{})
		if err != nil {
			return false, err.Error()
		}
		return strings.Join(changed, ",") == "envs/prod/api.yaml,envs/prod/web.yaml" && len(commits) == 1, fmt.Sprintf("files %v, %d commits", changed, len(commits))
	})
	if r.openPull(pr.Branch("pinbot/", "prod", r.app)) != nil || r.openPull(pr.Branch("pinbot/", "prod", api)) != nil {
		t.Error("a member of the group was proposed on its own")
	}
	poll.Until(t, time.Minute, "the group's gate green after the soak", func() (bool, string) {
		p := r.openPull(branch)
		if p == nil {
			return false, "no pull request"
		}
		state, desc := r.gateStatus(p.Head.Sha)
		return state == "success" && desc == "api, app proven together in staging", state + ": " + desc
	})
	l := r.ledger()
	if a, b := l.Lookup("prod", r.app).Proposal, l.Lookup("prod", api).Proposal; a == nil || b == nil || a.PR != b.PR || a.Group != "app+api" {
		t.Errorf("the ledger's proposals %+v and %+v, want one pull request of the group", a, b)
	}

	// api crash-loops in prod: the set goes back.
	r.peers.Node.CrashLoop(func(p *corev1.Pod) bool { return p.Namespace == "prod" && kubeletsim.UsesImage(apiV2)(p) })
	r.merge(r.openPull(branch).Index)
	rb := r.pull(pr.TogetherRollbackBranch("pinbot/", "prod", "app+api"), 2*time.Minute)
	l = r.ledger()
	for _, held := range [][2]string{{r.app, appV2}, {api, apiV2}} {
		if l.Held("prod", held[0], held[1]) == nil {
			t.Errorf("%s@%s not held in prod: %s", held[0], held[1], r.ledgerSummary())
		}
	}
	if code, out := r.pinbot(append([]string{"promote", "--env", "prod", "--image", r.app, "--digest", appV2, "--force", "--reason", "test"}, gateArgs...)...); code == 0 || !strings.Contains(out, "held in prod") {
		t.Errorf("promoting app v2, held with its group, into prod: exit %d: %s", code, out)
	}
	r.merge(rb.Index)
	r.waitProven("prod", r.v1, 2*time.Minute)
	poll.Until(t, time.Minute, "api back on v1 in prod", func() (bool, string) {
		return r.ledger().Lookup("prod", api).Proven == apiV1, r.ledgerSummary()
	})
}
