package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/testenv/browser"
	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/internal/testenv/oidcop"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/serve/actions"
	"pinbot.dev/pinbot/serve/signin"
)

// TestReleaseActionsOnRealGitea: olga opens serve's release page in
// chromium, signs in at the OpenID Provider and is sent back, the
// cluster's RBAC letting her roll back and force in prod. v2 is proven
// in prod; she clicks Roll back and confirms, and pinbot's rollback pull
// request to v1 opens on real Gitea naming her and her reason, v2 held,
// her ask in the audit and a Kubernetes Event. Staging then pins v3; she
// clicks Force on prod's stage, and pinbot's forced pull request opens,
// past the gate, with her name and reason.
func TestReleaseActionsOnRealGitea(t *testing.T) {
	ctx := context.Background()
	r := newReleaseRig(ctx, t, twoEnvs, 1)
	bin, err := gitea.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	base := "http://" + addr
	issuer := oidcop.Start(t, filepath.Join(bin, "oidc"), base+signin.CallbackPath)
	cfg, err := os.ReadFile(r.cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.cfg = r.write("pinbot.yaml", string(cfg)+fmt.Sprintf("dashboard:\n  oidc:\n    issuer: %s\n    clientID: web\n    scopes: [profile, email]\n    clientSecretFile: %s\n    redirectURL: %s\n    sessionKeyFile: %s\n",
		issuer, r.write("oidc-secret", "secret\n"), base+signin.CallbackPath, r.write("session-key", strings.Repeat("s", 40)+"\n")))
	repo := r.peers.Gitea.AdminUser + "/manifests"
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "prod-operator"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{actions.Group}, Resources: []string{actions.Resource}, ResourceNames: []string{repo + "/prod"},
		Verbs: []string{actions.Rollback, actions.Force}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "olga-prod"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "olga"}}}
	if _, err := r.peers.Kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.peers.Kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.serveAt("a", addr, "--release-interval", "1s", "--gate-token-file", r.gateFile)
	r.waitProven("prod", r.v1, 2*time.Minute)

	_, v2 := r.image("app", "v2")
	if code, out := r.pinbot("promote", "--image", r.app, "--digest", v2); code != 0 {
		t.Fatalf("promote v2: exit %d: %s", code, out)
	}
	r.merge(r.pull(r.branch("staging"), time.Minute).Index)
	r.waitProven("staging", v2, 2*time.Minute)
	prod := r.pull(r.branch("prod"), time.Minute)
	r.waitGreen(prod)
	r.merge(prod.Index)
	r.waitProven("prod", v2, 2*time.Minute)

	// olga opens the release page in chromium, signs in at the provider
	// and is sent back to it; she clicks Roll back on prod and confirms
	// with her reason.
	b := browser.Start(t)
	b.Do(chromedp.Navigate(base + "/releases/" + repo))
	b.Do(chromedp.WaitVisible(chromedp.CSS(`#username`)))
	b.Do(chromedp.SendKeys(chromedp.CSS(`#username`), "olga"), chromedp.SendKeys(chromedp.CSS(`#password`), "olga-pw"),
		chromedp.Submit(chromedp.CSS(`#username`)))
	rollback := `li.stage[data-env="prod"] a.action[href^="/actions/rollback"]`
	b.Do(chromedp.WaitVisible(chromedp.CSS(rollback)))
	confirm := func(action, reason string) {
		t.Helper()
		b.Do(chromedp.Click(chromedp.CSS(action)))
		b.Do(chromedp.WaitVisible(chromedp.CSS(`input[name="reason"]`)))
		b.Do(chromedp.SendKeys(chromedp.CSS(`input[name="reason"]`), reason), chromedp.Click(chromedp.CSS(`button[type="submit"]`)))
	}
	confirm(rollback, "checkout errors since v2")
	rb := r.pull(r.rollbackBranch("prod"), 2*time.Minute)
	for _, want := range []string{"olga", "checkout errors since v2", imageref.Short(r.v1)} {
		if !strings.Contains(rb.Title+rb.Body, want) {
			t.Errorf("the rollback pull request lacks %q:\n%s\n%s", want, rb.Title, rb.Body)
		}
	}
	l := r.ledger()
	if l.Held("prod", r.appKey(), v2) == nil {
		t.Errorf("v2 not held in prod after olga's rollback: %s", r.ledgerSummary())
	}
	if a := l.Audit; len(a) == 0 || a[len(a)-1].Reason != release.ReasonRollbackAsked || a[len(a)-1].By != "olga" || a[len(a)-1].Why != "checkout errors since v2" {
		t.Errorf("the audit: %+v; want olga's ask", l.Audit)
	}
	poll.Until(t, 30*time.Second, "a RollbackAsked Event on web-prod", func() (bool, string) {
		evs, err := r.peers.Kube.CoreV1().Events("pinbot-system").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=pinbot-app-web-prod,reason=" + release.ReasonRollbackAsked})
		if err != nil || len(evs.Items) == 0 {
			return false, fmt.Sprint(err)
		}
		return strings.Contains(evs.Items[0].Message, "olga"), evs.Items[0].Message
	})

	// A click on Force: staging pins v3, unproven there yet; olga forces
	// it into prod past the gate.
	_, v3 := r.image("app", "v3")
	r.peers.Node.FailReadiness(kubeletsim.UsesImage(v3))
	defer r.peers.Node.FailReadiness(nil)
	if code, out := r.pinbot("promote", "--image", r.app, "--digest", v3); code != 0 {
		t.Fatalf("promote v3: exit %d: %s", code, out)
	}
	r.merge(r.pull(r.branch("staging"), time.Minute).Index)
	force := `li.stage[data-env="prod"] a.action[href^="/actions/force"]`
	poll.Until(t, time.Minute, "Force on prod's stage", func() (bool, string) {
		b.Open(base+"/releases/"+repo, `li.stage[data-env="prod"]`)
		return b.Eval(`String(document.querySelector('`+force+`') !== null)`) == "true", b.Eval(`document.querySelector('li.stage[data-env="prod"]').textContent.replace(/\s+/g, " ")`)
	})
	confirm(force, "hotfix for CVE-2026-0002")
	forced := r.pull(r.forcedBranch("prod"), time.Minute)
	for _, want := range []string{"Forced past the gate", "olga: hotfix for CVE-2026-0002", imageref.Short(v3)} {
		if !strings.Contains(forced.Body, want) {
			t.Errorf("the forced pull request lacks %q:\n%s", want, forced.Body)
		}
	}
	poll.Until(t, 30*time.Second, "olga's force in the audit", func() (bool, string) {
		a := r.ledger().Audit
		last := a[len(a)-1]
		return last.Reason == release.ReasonPromotionOpened && last.By == "olga" && strings.Contains(last.What, fmt.Sprintf("#%d", forced.Index)), fmt.Sprintf("%+v", last)
	})
}
