package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/internal/testenv/stack"
	"pinbot.dev/pinbot/promote/pr"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/proofapi"
	"pinbot.dev/pinbot/release/store"
	"pinbot.dev/pinbot/serve/notify"
)

// releaseRig is a release chain on the real peers: a manifest repository
// whose .pinbot.yaml declares staging then prod, each a directory with a
// Deployment of image app, synced by pinbot's apps web-staging and
// web-prod into namespaces staging and prod.
type releaseRig struct {
	*serveRig
	app       string // the image's repository
	v1        string // the digest both environments start on
	gateToken string
	gateFile  string
	// notified is what serve's notify: webhook received.
	notified *notified
}

// notified is a JSON webhook that keeps the notifications posted to it
// whose HMAC-SHA256 signature is right.
type notified struct {
	mu     sync.Mutex
	events []notify.Event
	bad    int
}

const notifySecret = "notify-s3cret-for-tests"

func (n *notified) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	mac := hmac.New(sha256.New, []byte(notifySecret))
	mac.Write(b)
	var e notify.Event
	n.mu.Lock()
	defer n.mu.Unlock()
	if r.Header.Get(notify.SignatureHeader) != "sha256="+hex.EncodeToString(mac.Sum(nil)) || json.Unmarshal(b, &e) != nil {
		n.bad++
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	n.events = append(n.events, e)
}

// has reports whether a notification of reason about env arrived whose
// message contains text.
func (n *notified) has(reason, env, text string) (bool, string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var got []string
	for _, e := range n.events {
		got = append(got, e.Reason+" "+strings.Join(e.Envs, ",")+": "+e.Message)
		if e.Reason == reason && slices.Contains(e.Envs, env) && strings.Contains(e.Message, text) {
			return true, ""
		}
	}
	return false, fmt.Sprintf("%d badly signed; received:\n%s", n.bad, strings.Join(got, "\n"))
}

const releaseToken = "gate-t0ken-for-tests"

// newReleaseRig starts the peers and creates the repository with the
// environments YAML chain (the .pinbot.yaml section) and both Deployments
// on v1, of replicas each.
func newReleaseRig(ctx context.Context, t *testing.T, chain string, replicas int) *releaseRig {
	t.Helper()
	r := &releaseRig{serveRig: newServeRig(ctx, t, stack.Options{Namespaces: []string{"pinbot-system", "staging", "prod"}}, nil, "s3cret")}
	r.app, r.v1 = r.image("app", "v1")
	r.commit = r.createRepo("manifests", map[string]string{
		".pinbot.yaml":          chain,
		"envs/staging/web.yaml": webDeployment("staging", replicas, r.app+":v1@"+r.v1),
		"envs/prod/web.yaml":    webDeployment("prod", replicas, r.app+":v1@"+r.v1),
	})
	g := r.peers.Gitea
	repo := g.RepoURL(g.AdminUser, "manifests")
	r.notified = &notified{}
	hook := httptest.NewServer(r.notified)
	t.Cleanup(hook.Close)
	secret := r.write("notify-secret", notifySecret+"\n")
	r.cfg = r.write("pinbot.yaml", fmt.Sprintf(`interval: 2s
notify:
  - {name: test, url: %q, secretFile: %q}
forge: {url: %q}
apps:
  - {name: web-staging, repo: %s, branch: main, path: envs/staging, namespace: staging, allowNamespaces: [staging], syncPolicy: {automated: true}}
  - {name: web-prod, repo: %s, branch: main, path: envs/prod, namespace: prod, allowNamespaces: [prod], syncPolicy: {automated: true}}
promote:
  - {repo: %s/manifests, images: [%s]}
`, hook.URL, secret, g.URL, repo, repo, g.AdminUser, r.app))
	r.gateToken = releaseToken
	r.gateFile = r.write("gate-token", releaseToken+"\n")
	return r
}

// webDeployment is a Deployment web of replicas Pods of image in ns.
func webDeployment(ns string, replicas int, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: %s}
spec:
  replicas: %d
  strategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 0, maxSurge: 1}}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          image: %s
`, ns, replicas, image)
}

// serveReleases starts replica id with the release chain looked at every
// second and the gate endpoint on.
func (r *releaseRig) serveReleases(id string, args ...string) *replica {
	r.t.Helper()
	return r.serve(id, append([]string{"--release-interval", "1s", "--gate-token-file", r.gateFile}, args...)...)
}

// pinbot runs the pinbot binary with the forge's flags after args and
// returns its exit code and output.
func (r *releaseRig) pinbot(args ...string) (int, string) {
	r.t.Helper()
	g := r.peers.Gitea
	cmd := exec.Command(pinbotBin, append(args, "--forge-url", g.URL, "--repo", g.AdminUser+"/manifests")...)
	// KUBECONFIG: promote and drift read the release chain's ledger from the
	// cluster when not given --gate-url.
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+r.docker, "PINBOT_GITEA_TOKEN="+g.Token, "XDG_CACHE_HOME="+r.t.TempDir(), "KUBECONFIG="+r.peers.Cluster.Kubeconfig)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case asExit(err, &ee):
		return ee.ExitCode(), string(out)
	}
	r.t.Fatalf("pinbot %s: %v", strings.Join(args, " "), err)
	return 0, ""
}

func asExit(err error, ee **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*ee = e
	return ok
}

// pull waits for the open pull request on branch and returns it.
func (r *releaseRig) pull(branch string, within time.Duration) *sdk.PullRequest {
	r.t.Helper()
	var found *sdk.PullRequest
	poll.Until(r.t, within, "an open pull request on "+branch, func() (bool, string) {
		found = r.openPull(branch)
		return found != nil, r.ledgerSummary()
	})
	return found
}

// openPull is the open pull request on branch, or nil.
func (r *releaseRig) openPull(branch string) *sdk.PullRequest {
	if prs := r.pullsOn(branch, sdk.StateOpen); len(prs) > 0 {
		return prs[0]
	}
	return nil
}

// pullsOn lists the pull requests on branch in state (open, closed or
// all).
func (r *releaseRig) pullsOn(branch string, state sdk.StateType) []*sdk.PullRequest {
	r.t.Helper()
	g := r.peers.Gitea
	c, err := g.Client(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	prs, _, err := c.ListRepoPullRequests(g.AdminUser, "manifests", sdk.ListPullRequestsOptions{State: state})
	if err != nil {
		r.t.Fatal(err)
	}
	var out []*sdk.PullRequest
	for _, pr := range prs {
		if pr.Head != nil && pr.Head.Ref == branch {
			out = append(out, pr)
		}
	}
	return out
}

// branchExists reports whether the repository has branch.
func (r *releaseRig) branchExists(branch string) bool {
	r.t.Helper()
	g := r.peers.Gitea
	heads, err := gitforge.RemoteHeads(r.ctx, g.RepoURL(g.AdminUser, "manifests"), gitforge.Auth{Token: g.Token}, branch)
	if err != nil {
		r.t.Fatal(err)
	}
	return heads[branch] != ""
}

// merge merges pull request number as a reviewer and returns the merge
// commit.
func (r *releaseRig) merge(number int64) string {
	r.t.Helper()
	g := r.peers.Gitea
	sha, err := g.MergePull(r.ctx, g.AdminUser, "manifests", number)
	if err != nil {
		r.t.Fatal(err)
	}
	return sha
}

// branch is the branch of pinbot's promotion of the app into env.
func (r *releaseRig) branch(env string) string { return pr.Branch("pinbot/", env, r.app) }

// forcedBranch is the branch of a promotion of the app forced into env.
func (r *releaseRig) forcedBranch(env string) string { return pr.ForcedBranch("pinbot/", env, r.app) }

// rollbackBranch is the branch of pinbot's rollback of the app in env.
func (r *releaseRig) rollbackBranch(env string) string {
	return pr.RollbackBranch("pinbot/", env, r.app)
}

// ledger is the repository's ledger as pinbot serve stored it.
func (r *releaseRig) ledger() *release.Ledger {
	r.t.Helper()
	cm, err := r.peers.Kube.CoreV1().ConfigMaps("pinbot-system").Get(r.ctx, store.Name(r.peers.Gitea.AdminUser+"/manifests"), metav1.GetOptions{})
	if err != nil {
		return release.New()
	}
	l, err := release.Parse([]byte(cm.Data["ledger.json"]))
	if err != nil {
		r.t.Fatal(err)
	}
	return l
}

// editLedger changes the ledger's JSON as someone who may write the
// ConfigMap but not read the key that seals it would.
func (r *releaseRig) editLedger(edit func(*release.Ledger)) {
	r.t.Helper()
	cms := r.peers.Kube.CoreV1().ConfigMaps("pinbot-system")
	cm, err := cms.Get(r.ctx, store.Name(r.peers.Gitea.AdminUser+"/manifests"), metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	l, err := release.Parse([]byte(cm.Data["ledger.json"]))
	if err != nil {
		r.t.Fatal(err)
	}
	edit(l)
	data, err := l.Marshal()
	if err != nil {
		r.t.Fatal(err)
	}
	cm.Data["ledger.json"] = string(data)
	if _, err := cms.Update(r.ctx, cm, metav1.UpdateOptions{}); err != nil {
		r.t.Fatal(err)
	}
}

// track is the app's track in env ("" fields when none yet).
func (r *releaseRig) track(env string) release.Track {
	if t := r.ledger().Lookup(env, r.appKey()); t != nil {
		return *t
	}
	return release.Track{}
}

// appKey is the app's repository as the ledger keys it (normalised).
func (r *releaseRig) appKey() string { return r.app }

// ledgerSummary is a line per environment, for poll messages.
func (r *releaseRig) ledgerSummary() string {
	var b strings.Builder
	l := r.ledger()
	envs := slices.Sorted(maps.Keys(l.Envs))
	for _, env := range envs {
		t := l.Lookup(env, r.appKey())
		if t == nil {
			continue
		}
		fmt.Fprintf(&b, "%s: pinned %s proven %s since %v why %q; ", env, short(t.Pinned), short(t.Proven), t.ProvenSince, t.Why)
	}
	return b.String()
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

// waitGreen waits until pinbot's pinbot/gate on pull's head is green.
func (r *releaseRig) waitGreen(pull *sdk.PullRequest) {
	r.t.Helper()
	poll.Until(r.t, time.Minute, fmt.Sprintf("a green gate on #%d (%s)", pull.Index, pull.Head.Ref), func() (bool, string) {
		state, desc := r.gateStatus(pull.Head.Sha)
		return state == "success", state + ": " + desc
	})
}

// waitHeld waits until digest is held in each of envs.
func (r *releaseRig) waitHeld(digest string, envs ...string) {
	r.t.Helper()
	poll.Until(r.t, 30*time.Second, short(digest)+" held in "+strings.Join(envs, ", "), func() (bool, string) {
		l := r.ledger()
		for _, env := range envs {
			if l.Held(env, r.appKey(), digest) == nil {
				return false, env + ": not held; " + r.ledgerSummary()
			}
		}
		return true, ""
	})
}

// waitProven waits until env proves digest.
func (r *releaseRig) waitProven(env, digest string, within time.Duration) release.Track {
	r.t.Helper()
	var t release.Track
	poll.Until(r.t, within, env+" proving "+short(digest), func() (bool, string) {
		t = r.track(env)
		return t.Proven == digest, r.ledgerSummary()
	})
	return t
}

// ask asks rep's gate endpoint with token.
func (r *releaseRig) ask(rep *replica, token string, q proofapi.Query) (int, proofapi.Answer) {
	r.t.Helper()
	u := fmt.Sprintf("http://%s%s?env=%s&image=%s&digest=%s", rep.addr, proofapi.Path, q.Env, q.Image, q.Digest)
	req, _ := http.NewRequestWithContext(r.ctx, http.MethodGet, u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var a proofapi.Answer
	_ = json.NewDecoder(resp.Body).Decode(&a)
	return resp.StatusCode, a
}

// gateStatus is the pinbot/gate status on sha, "" when none.
// gateHistory lists every pinbot/gate status posted on sha, as
// "state: description".
func (r *releaseRig) gateHistory(sha string) []string {
	g := r.peers.Gitea
	c, err := g.Client(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	sts, _, err := c.ListStatuses(g.AdminUser, "manifests", sha, sdk.ListStatusesOption{ListOptions: sdk.ListOptions{PageSize: 50}})
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, s := range sts {
		if s.Context == "pinbot/gate" {
			out = append(out, string(s.State)+": "+s.Description)
		}
	}
	return out
}

func (r *releaseRig) gateStatus(sha string) (state, desc string) {
	g := r.peers.Gitea
	c, err := g.Client(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	cs, _, err := c.GetCombinedStatus(g.AdminUser, "manifests", sha)
	if err != nil {
		return "", ""
	}
	for _, s := range cs.Statuses {
		if s.Context == "pinbot/gate" {
			return string(s.State), s.Description
		}
	}
	return "", ""
}
