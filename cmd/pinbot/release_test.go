package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/proofapi"
)

const twoEnvs = `environments:
  - name: staging
    paths: ["envs/staging/**"]
    apps: [web-staging]
    soak: 6s
  - name: prod
    from: staging
    paths: ["envs/prod/**"]
    apps: [web-prod]
`

// TestReleaseChain: CI promotes into staging, a reviewer merges, staging
// proves it, and pinbot opens prod's pull request with staging's proof and
// pinbot/gate pending while staging soaks; a stale Pod during the soak
// turns the gate red and restarts the soak, and the gate goes green once
// the restarted soak completes. A CI promotion of
// an unproven digest into prod is refused, and forced with a reason. The
// gate endpoint answers for a proven digest, an unproven one, and refuses
// a request without the token.
func TestReleaseChain(t *testing.T) {
	ctx := context.Background()
	r := newReleaseRig(ctx, t, twoEnvs, 2)
	rep := r.serveReleases("a")
	r.waitProven("staging", r.v1, 2*time.Minute)
	r.waitProven("prod", r.v1, time.Minute)

	// A person pauses prod: staging proves v2, and nothing opens into
	// prod until they resume.
	chain := func(args ...string) {
		t.Helper()
		cmd := exec.Command(pinbotBin, append(append([]string{"chain"}, args...), "--config", r.cfg)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+r.peers.Cluster.Kubeconfig)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pinbot chain %s: %v\n%s", args[0], err, out)
		}
	}
	chain("pause", "prod", "--reason", "incident 42")
	_, v2 := r.image("app", "v2")
	if code, out := r.pinbot("promote", "--image", r.app, "--digest", v2); code != 0 {
		t.Fatalf("promote v2: exit %d: %s", code, out)
	}
	staging := r.pull(r.branch("staging"), time.Minute)
	r.merge(staging.Index)
	first := r.waitProven("staging", v2, 2*time.Minute)
	poll.Until(t, 30*time.Second, "serve stepping the paused chain", func() (bool, string) {
		m, _ := release.Next(r.ledger(), release.Chain{{Name: "staging"}, {Name: "prod", From: "staging"}}, "prod", r.appKey(), time.Now())
		return m.State == release.MovePaused && m.Digest == v2, fmt.Sprintf("%+v", m)
	})
	if pr := r.openPull(r.branch("prod")); pr != nil || r.track("prod").Proposal != nil {
		t.Fatalf("prod paused, and #%v opened into it", pr)
	}
	chain("resume", "prod", "--reason", "incident over")
	// v2 proved well within half its readiness window: no rollback was
	// readied for it, and no branch pushed.
	if strings.Contains(rep.log.String(), "readied the rollback branch") || r.branchExists(r.rollbackBranch("staging")) {
		t.Errorf("a release that proved at once had its rollback readied:\n%s", rep.log.String())
	}

	// Proposed as soon as staging proves it: prod's pull request carries
	// staging's proof, its gate pending while staging soaks.
	prod := r.pull(r.branch("prod"), time.Minute)
	for _, want := range []string{"### Proven in staging", "web-staging", "staging/web-", v2[:len("sha256:")+12], "soak 6s"} {
		if !strings.Contains(prod.Body, want) {
			t.Errorf("prod's pull request body lacks %q:\n%s", want, prod.Body)
		}
	}

	// A stale Pod mid-soak: the proof breaks, the gate fails, the soak
	// restarts.
	if err := r.peers.Node.StaleImage(r.app, r.v1); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, time.Minute, "staging's proof broken by the stale Pod", func() (bool, string) {
		return r.track("staging").Proven == "", r.ledgerSummary()
	})
	poll.Until(t, time.Minute, "a red pinbot/gate on prod's pull request", func() (bool, string) {
		state, desc := r.gateStatus(prod.Head.Sha)
		return state == "failure" && strings.Contains(desc, "staging no longer proves"), state + ": " + desc
	})
	if err := r.peers.Node.StaleImage(r.app, ""); err != nil {
		t.Fatal(err)
	}
	again := r.waitProven("staging", v2, time.Minute)
	if !again.ProvenSince.After(*first.ProvenSince) {
		t.Errorf("the soak did not restart: proven since %v, then %v", first.ProvenSince, again.ProvenSince)
	}
	soaked := again.ProvenSince.Add(6 * time.Second)
	poll.Until(t, time.Minute, "a green pinbot/gate on prod's pull request", func() (bool, string) {
		state, desc := r.gateStatus(prod.Head.Sha)
		return state == "success" && strings.Contains(desc, "proven in staging"), state + ": " + desc
	})
	if green := time.Now(); green.Before(soaked) {
		t.Errorf("prod's gate went green at %s, before the soak ended at %s", green.Format(time.RFC3339Nano), soaked.Format(time.RFC3339Nano))
	}
	if h := r.gateHistory(prod.Head.Sha); !slices.Contains(h, "pending: proven in staging, soaking until "+soaked.UTC().Format(time.RFC3339)) {
		t.Errorf("prod's gate never said until when the restarted soak ran (%s): %q", soaked.UTC().Format(time.RFC3339), h)
	}
	if pr := r.openPull(r.branch("prod")); pr == nil || pr.Index != prod.Index {
		t.Errorf("the soak's restart replaced prod's pull request #%d", prod.Index)
	}

	// The gate endpoint: proven, unproven, no token.
	if code, a := r.ask(rep, r.gateToken, proofapi.Query{Env: "staging", Image: r.app, Digest: v2}); code != http.StatusOK || !a.Verified || a.Since == nil || len(a.Pods) != 2 {
		t.Errorf("gate for staging's v2: %d %+v, want verified with its 2 Pods", code, a)
	}
	_, v3 := r.image("app", "v3")
	if code, a := r.ask(rep, r.gateToken, proofapi.Query{Env: "staging", Image: r.app, Digest: v3}); code != http.StatusOK || a.Verified || !strings.Contains(a.Why, "staging pins") {
		t.Errorf("gate for an unproven digest: %d %+v", code, a)
	}
	if code, _ := r.ask(rep, "", proofapi.Query{Env: "staging", Image: r.app, Digest: v2}); code != http.StatusUnauthorized {
		t.Errorf("gate without a token: %d, want 401", code)
	}

	// CI into prod: an unproven digest is refused, nothing pushed; forced
	// with a reason, it goes, and says so.
	gateURL := "http://" + rep.addr
	headBefore := prod.Head.Sha
	code, out := r.pinbot("promote", "--env", "prod", "--image", r.app, "--digest", v3, "--gate-url", gateURL, "--gate-token-file", r.gateFile)
	if code != 1 || !strings.Contains(out, "not proven in staging") {
		t.Errorf("promote --env prod of an unproven digest: exit %d: %s", code, out)
	}
	if pr := r.openPull(r.branch("prod")); pr == nil || pr.Head.Sha != headBefore {
		t.Errorf("the refused promotion pushed to prod's branch")
	}
	code, out = r.pinbot("promote", "--env", "prod", "--image", r.app, "--digest", v3, "--gate-url", gateURL, "--gate-token-file", r.gateFile,
		"--force", "--reason", "hotfix for the outage")
	if code != 0 {
		t.Fatalf("promote --force: exit %d: %s", code, out)
	}
	if pr := r.openPull(r.forcedBranch("prod")); pr == nil || !strings.Contains(pr.Body, "Forced past the gate") || !strings.Contains(pr.Body, "hotfix for the outage") {
		t.Errorf("the forced promotion's body does not say so")
	}
}

// TestReleaseRollback: a bad release merged into prod - Pods never Ready,
// a crash loop, an image that cannot be pulled - gets a rollback pull
// request to the last proven digest with the evidence, and the digest is
// held: a CI promotion of it is refused naming the hold, even forced. A
// bad release into staging is held there and in prod, and drift refuses
// it. A rollback that fails to prove is not rolled back.
func TestReleaseRollback(t *testing.T) {
	ctx := context.Background()
	chain := strings.Replace(twoEnvs, "    soak: 6s\n", "    soak: 6s\n    readyTimeout: 8s\n", 1) + `    readyTimeout: 8s
    rollbackWindow: 10m
`
	r := newReleaseRig(ctx, t, chain, 1)
	rep := r.serveReleases("a")
	gateArgs := []string{"--gate-url", "http://" + rep.addr, "--gate-token-file", r.gateFile}
	r.waitProven("prod", r.v1, 2*time.Minute)

	t.Run("a bad release in staging is held there and in prod, and drift refuses it", func(t *testing.T) {
		_, bad := r.image("app", "bad-in-staging")
		r.peers.Node.FailReadiness(kubeletsim.UsesImage(bad))
		if code, out := r.pinbot(append([]string{"promote", "--image", r.app, "--digest", bad}, gateArgs...)...); code != 0 {
			t.Fatalf("promote: exit %d: %s", code, out)
		}
		r.merge(r.pull(r.branch("staging"), time.Minute).Index)
		rb := r.pull(r.rollbackBranch("staging"), 2*time.Minute)
		r.waitHeld(bad, "staging", "prod")
		r.waitAnnounced(t, rep, bad)
		r.merge(rb.Index)
		r.waitProven("staging", r.v1, 2*time.Minute)
		// The tag the pins follow now points at the held digest: drift
		// refuses to propose it, naming the hold.
		if _, err := r.peers.Gitea.PushImageAs(r.app+":bad-in-staging", r.app+":v1"); err != nil {
			t.Fatal(err)
		}
		code, out := r.pinbot(append([]string{"drift"}, gateArgs...)...)
		if code != 1 || !strings.Contains(out, "held in staging") {
			t.Errorf("drift with the tag on the held digest: exit %d: %s", code, out)
		}
		if pr := r.openPull(r.branch("staging")); pr != nil {
			t.Errorf("drift opened #%d with the held digest", pr.Index)
		}
		if code, out := r.pinbot(append([]string{"promote", "--image", r.app, "--digest", bad}, gateArgs...)...); code != 1 || !strings.Contains(out, "held in staging") {
			t.Errorf("promoting the held digest into staging: exit %d: %s", code, out)
		}
		// Someone who may write ConfigMaps lifts the prod hold in the
		// ledger's JSON, without the key that seals it: serve writes
		// back what it last saw, and says so.
		r.editLedger(func(l *release.Ledger) { l.Release("prod", r.appKey(), bad) })
		poll.Until(t, 30*time.Second, "serve restoring the prod hold", func() (bool, string) {
			l := r.ledger()
			return l.Held("prod", r.appKey(), bad) != nil && slices.ContainsFunc(l.Events, func(e release.Event) bool { return e.Reason == release.ReasonLedgerRestored }),
				r.ledgerSummary()
		})
		// A person lifts the hold between two steps: serve's next step
		// writes it as an Event too.
		lift := exec.Command(pinbotBin, "hold", "release", "staging", r.app+"@"+bad, "--reason", "the bad build was a test", "--config", r.cfg)
		lift.Env = append(os.Environ(), "KUBECONFIG="+r.peers.Cluster.Kubeconfig)
		if out, err := lift.CombinedOutput(); err != nil {
			t.Fatalf("pinbot hold release: %v\n%s", err, out)
		}
		poll.Until(t, 30*time.Second, "a HoldLifted Event on web-staging", func() (bool, string) {
			evs, err := r.peers.Kube.CoreV1().Events("pinbot-system").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=pinbot-app-web-staging,reason=" + release.ReasonHoldLifted})
			if err != nil || len(evs.Items) == 0 {
				return false, fmt.Sprint(err)
			}
			return strings.Contains(evs.Items[0].Message, "the bad build was a test"), evs.Items[0].Message
		})
		r.peers.Node.FailReadiness(nil)
	})
	for _, tc := range []struct {
		name     string
		break_   func(digest string)
		evidence string
	}{
		{"never ready", func(d string) { r.peers.Node.FailReadiness(kubeletsim.UsesImage(d)) }, "not Ready"},
		{"crash loop", func(d string) { r.peers.Node.CrashLoop(kubeletsim.UsesImage(d)) }, "CrashLoopBackOff"},
		{"image pull", func(d string) { r.peers.Node.FailPull(d) }, "ImagePullBackOff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, bad := r.image("app", strings.ReplaceAll(tc.name, " ", "-"))
			tc.break_(bad)
			if code, out := r.pinbot(append([]string{"promote", "--env", "prod", "--image", r.app, "--digest", bad, "--force", "--reason", "testing " + tc.name}, gateArgs...)...); code != 0 {
				t.Fatalf("promote: exit %d: %s", code, out)
			}
			r.merge(r.pull(r.forcedBranch("prod"), time.Minute).Index)
			rb := r.pull(r.rollbackBranch("prod"), 2*time.Minute)
			// Readied halfway through the 8 s window: the rollback's pull
			// request is on the commit pushed then.
			if tc.name == "never ready" && !strings.Contains(rep.log.String(), "readied the rollback branch; no pull request opened\" branch="+r.rollbackBranch("prod")+" head="+rb.Head.Sha) {
				t.Errorf("the rollback's head %s is not the readied commit:\n%s", rb.Head.Sha, rep.log.String())
			}
			for _, want := range []string{"rolls", r.v1[:len("sha256:")+12], bad[:len("sha256:")+12], tc.evidence} {
				if !strings.Contains(rb.Body+rb.Title, want) {
					t.Errorf("rollback pull request lacks %q:\n%s\n%s", want, rb.Title, rb.Body)
				}
			}
			poll.Until(t, 30*time.Second, "the rollback labelled pinbot-rollback", func() (bool, string) {
				pr := r.openPull(r.rollbackBranch("prod"))
				return pr != nil && hasLabel(pr, "pinbot-rollback"), ""
			})
			poll.Until(t, 30*time.Second, "the bad digest held in prod", func() (bool, string) {
				return r.ledger().Held("prod", r.appKey(), bad) != nil, r.ledgerSummary()
			})
			if tc.name == "never ready" {
				r.seeBadRelease(t, rep, bad, rb)
			}
			code, out := r.pinbot(append([]string{"promote", "--env", "prod", "--image", r.app, "--digest", bad, "--force", "--reason", "again"}, gateArgs...)...)
			if code != 1 || !strings.Contains(out, "held in prod") {
				t.Errorf("promoting the held digest: exit %d: %s", code, out)
			}
			r.merge(rb.Index)
			r.waitProven("prod", r.v1, 2*time.Minute)
		})
	}

	t.Run("a rollback that fails is not rolled back", func(t *testing.T) {
		_, bad := r.image("app", "bad-again")
		r.peers.Node.FailReadiness(kubeletsim.UsesImage(bad))
		if code, out := r.pinbot(append([]string{"promote", "--env", "prod", "--image", r.app, "--digest", bad, "--force", "--reason", "last"}, gateArgs...)...); code != 0 {
			t.Fatalf("promote: exit %d: %s", code, out)
		}
		r.merge(r.pull(r.forcedBranch("prod"), time.Minute).Index)
		rb := r.pull(r.rollbackBranch("prod"), 2*time.Minute)
		r.peers.Node.FailReadiness(kubeletsim.UsesImage(r.v1)) // the rollback's digest now fails too
		r.merge(rb.Index)
		poll.Until(t, 2*time.Minute, "the failed rollback reported", func() (bool, string) {
			for _, e := range r.ledger().Events {
				if strings.Contains(e.What, "does not roll back a rollback") {
					return true, ""
				}
			}
			return false, r.ledgerSummary()
		})
		if pr := r.openPull(r.rollbackBranch("prod")); pr != nil {
			t.Errorf("a rollback of the rollback was opened: #%d", pr.Index)
		}
		r.peers.Node.FailReadiness(nil)
	})

	// prod holds the bad digests now. Renaming it in .pinbot.yaml must not
	// drop them: serve stops the chain and every admission is refused,
	// naming the holds, until the name comes back.
	t.Run("renaming an environment keeps its holds", func(t *testing.T) {
		held := r.ledger().Holds
		if len(held) == 0 {
			t.Fatal("no holds to keep")
		}
		g := r.peers.Gitea
		commit := func(chain, msg string) {
			t.Helper()
			if _, err := g.Commit(ctx, g.AdminUser, "manifests", "main", "main", map[string]string{".pinbot.yaml": chain}, msg); err != nil {
				t.Fatal(err)
			}
		}
		commit(strings.ReplaceAll(chain, "name: prod", "name: production"), "Rename prod")
		poll.Until(t, time.Minute, "the chain stopped", func() (bool, string) {
			return strings.Contains(r.ledger().Stopped, "no longer declares the environment of these holds"), r.ledgerSummary()
		})
		_, next := r.image("app", "after-rename")
		code, out := r.pinbot(append([]string{"promote", "--image", r.app, "--digest", next}, gateArgs...)...)
		if code != 1 || !strings.Contains(out, "the chain is stopped") {
			t.Errorf("promoting into staging while the chain is stopped: exit %d: %s", code, out)
		}
		commit(chain, "Name prod again")
		poll.Until(t, time.Minute, "the chain running again, its holds kept", func() (bool, string) {
			l := r.ledger()
			return l.Stopped == "" && len(l.Holds) == len(held), r.ledgerSummary()
		})
		if code, out := r.pinbot(append([]string{"promote", "--image", r.app, "--digest", next}, gateArgs...)...); code != 0 {
			t.Errorf("promoting into staging once the name is back: exit %d: %s", code, out)
		}
	})
}

func hasLabel(pr *sdk.PullRequest, name string) bool {
	for _, l := range pr.Labels {
		if l.Name == name {
			return true
		}
	}
	return false
}

// TestReleaseFailover: serve's leader dies mid-soak; the new leader keeps
// the soak's start from the ledger, and turns the onward pull request's
// gate green when the original soak ends, not one soak after the
// failover.
func TestReleaseFailover(t *testing.T) {
	ctx := context.Background()
	r := newReleaseRig(ctx, t, strings.Replace(twoEnvs, "soak: 6s", "soak: 15s", 1), 1)
	a := r.serveReleases("a")
	poll.Until(t, time.Minute, "replica a leading", func() (bool, string) { return r.holder() == "a", r.holder() })
	b := r.serveReleases("b")
	_ = b
	r.waitProven("staging", r.v1, 2*time.Minute)
	_, v2 := r.image("app", "v2")
	if code, out := r.pinbot("promote", "--image", r.app, "--digest", v2); code != 0 {
		t.Fatalf("promote v2: exit %d: %s", code, out)
	}
	r.merge(r.pull(r.branch("staging"), time.Minute).Index)
	proven := r.waitProven("staging", v2, 2*time.Minute)
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done
	poll.Until(t, time.Minute, "replica b leading", func() (bool, string) { return r.holder() == "b", r.holder() })
	prod := r.pull(r.branch("prod"), 2*time.Minute)
	poll.Until(t, time.Minute, "a green pinbot/gate on prod's pull request", func() (bool, string) {
		state, desc := r.gateStatus(prod.Head.Sha)
		return state == "success", state + ": " + desc
	})
	green := time.Now()
	if after := r.track("staging"); after.ProvenSince == nil || !after.ProvenSince.Equal(*proven.ProvenSince) {
		t.Errorf("the soak's start changed over the failover: %v, then %v", proven.ProvenSince, after.ProvenSince)
	}
	if late := green.Sub(proven.ProvenSince.Add(15 * time.Second)); late > 12*time.Second || late < 0 {
		t.Errorf("prod's gate went green %s after the soak ended: the soak restarted on failover, or was cut short", late)
	}
}

// TestReleaseGateOnEveryPull: a person's pull request (not pinbot's) that
// pins into prod a digest not proven in staging gets a red pinbot/gate
// naming the rule; one that pins staging's proven digest gets a green one.
// Branch protection that requires pinbot/gate makes it binding.
func TestReleaseGateOnEveryPull(t *testing.T) {
	ctx := context.Background()
	r := newReleaseRig(ctx, t, twoEnvs, 1)
	r.serveReleases("a")
	r.waitProven("prod", r.v1, 2*time.Minute)
	g := r.peers.Gitea
	c, err := g.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, unproven := r.image("app", "unproven")
	for _, tc := range []struct {
		name, branch, digest, state, want string
	}{
		{"an unproven digest into prod", "person/unproven", unproven, "failure", "is not proven in staging, which prod takes its digests from"},
		{"no pin changed", "person/readme", "", "success", "changes no pin of the release chain"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"README.md": "a person's change\n"}
			if tc.digest != "" {
				files = map[string]string{"envs/prod/web.yaml": webDeployment("prod", 1, r.app+":v1@"+tc.digest)}
			}
			sha, err := g.Commit(ctx, g.AdminUser, "manifests", "main", tc.branch, files, "a person's pull request")
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.CreatePullRequest(g.AdminUser, "manifests", sdk.CreatePullRequestOption{Head: tc.branch, Base: "main", Title: tc.name}); err != nil {
				t.Fatal(err)
			}
			poll.Until(t, time.Minute, "pinbot/gate on the person's pull request", func() (bool, string) {
				state, desc := r.gateStatus(sha)
				return state == tc.state && strings.Contains(desc, tc.want), state + ": " + desc
			})
		})
	}

	// A change of the chain fails until a person who may write the
	// ledger approves its head with pinbot chain approve.
	canary := twoEnvs + "  - name: canary\n    from: staging\n    paths: [\"envs/canary/**\"]\n    apps: [web-canary]\n"
	sha, err := g.Commit(ctx, g.AdminUser, "manifests", "main", "person/canary", map[string]string{".pinbot.yaml": canary}, "a canary")
	if err != nil {
		t.Fatal(err)
	}
	pr, _, err := c.CreatePullRequest(g.AdminUser, "manifests", sdk.CreatePullRequestOption{Head: "person/canary", Base: "main", Title: "a canary"})
	if err != nil {
		t.Fatal(err)
	}
	approve := fmt.Sprintf("pinbot chain approve %d --head %s", pr.Index, sha)
	poll.Until(t, time.Minute, "pinbot/gate naming the approval", func() (bool, string) {
		state, desc := r.gateStatus(sha)
		return state == "failure" && strings.Contains(desc, approve), state + ": " + desc
	})
	cmd := exec.Command(pinbotBin, "chain", "approve", strconv.FormatInt(pr.Index, 10), "--head", sha, "--reason", "a canary before prod",
		"--repo", g.AdminUser+"/manifests", "--config", r.cfg)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+r.peers.Cluster.Kubeconfig)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "approved #") {
		t.Fatalf("%s: %v\n%s", approve, err, out)
	}
	poll.Until(t, time.Minute, "pinbot/gate after the approval", func() (bool, string) {
		state, desc := r.gateStatus(sha)
		return state == "success" && strings.Contains(desc, "chain change approved by"), state + ": " + desc
	})
	if a := r.ledger().Audit; len(a) == 0 || a[len(a)-1].Reason != release.ReasonChainApproved || a[len(a)-1].Why != "a canary before prod" {
		t.Errorf("the ledger's audit: %+v; want the approval, with why", a)
	}
}
