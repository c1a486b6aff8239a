package main

import (
	"context"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/internal/testenv/poll"
)

// TestReleaseLeaderChangeBetweenActionAndRecord: the leader decides a
// rollback, writes the decision to the ledger and opens the rollback's
// pull request, but its record of the pull request never reaches the
// ledger (a validating admission policy on the real API server refuses
// it, as a leader dying at that moment would leave it), and then it
// dies. The next leader finds the decision pending, adopts the pull
// request that is already open instead of opening a second, and records
// it; once merged, the rollback is never rolled back.
func TestReleaseLeaderChangeBetweenActionAndRecord(t *testing.T) {
	ctx := context.Background()
	chain := strings.Replace(twoEnvs, "    apps: [web-prod]\n", "    apps: [web-prod]\n    readyTimeout: 8s\n", 1)
	r := newReleaseRig(ctx, t, chain, 1)
	a := r.serveReleases("a")
	poll.Until(t, time.Minute, "replica a leading", func() (bool, string) { return r.holder() == "a", r.holder() })
	r.serveReleases("b")
	r.waitProven("prod", r.v1, 2*time.Minute)

	unblock := r.refuseRecordedRollbacks()
	_, bad := r.image("app", "bad")
	r.peers.Node.FailReadiness(kubeletsim.UsesImage(bad))
	if code, out := r.pinbot("promote", "--env", "prod", "--image", r.app, "--digest", bad, "--force", "--reason", "a bad release"); code != 0 {
		t.Fatalf("promote: exit %d: %s", code, out)
	}
	r.merge(r.pull(r.forcedBranch("prod"), time.Minute).Index)
	opened := r.pull(r.rollbackBranch("prod"), 2*time.Minute)
	poll.Until(t, 30*time.Second, "the rollback decided in the ledger, its pull request not recorded", func() (bool, string) {
		rb := r.track("prod").Rollback
		return rb != nil && rb.PR == 0 && rb.Failed == bad, r.ledgerSummary()
	})
	poll.Until(t, 30*time.Second, "replica a's record of the pull request refused", func() (bool, string) {
		return strings.Contains(a.log.String(), "the test refuses to record a rollback's pull request"), ""
	})

	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done
	unblock()
	poll.Until(t, time.Minute, "replica b leading", func() (bool, string) { return r.holder() == "b", r.holder() })
	poll.Until(t, time.Minute, "the next leader recording the open rollback", func() (bool, string) {
		rb := r.track("prod").Rollback
		return rb != nil && rb.PR == opened.Index, r.ledgerSummary()
	})
	if prs := r.pullsOn(r.rollbackBranch("prod"), sdk.StateAll); len(prs) != 1 {
		var n []int64
		for _, pr := range prs {
			n = append(n, pr.Index)
		}
		t.Fatalf("rollback pull requests %v, want #%d alone: the next leader opened a second", n, opened.Index)
	}
	if pr := r.openPull(r.rollbackBranch("prod")); pr == nil || !strings.Contains(pr.Body, r.v1[:len("sha256:")+12]) {
		t.Fatalf("the adopted rollback no longer restores v1: %+v", pr)
	}

	r.merge(opened.Index)
	r.waitProven("prod", r.v1, 2*time.Minute)
	poll.Until(t, time.Minute, "the rollback recorded as merged", func() (bool, string) {
		return r.track("prod").Rollback == nil, r.ledgerSummary()
	})
	if pr := r.openPull(r.rollbackBranch("prod")); pr != nil {
		t.Errorf("the rollback was rolled back: #%d open", pr.Index)
	}
	if pr := r.openPull(r.branch("prod")); pr != nil && strings.Contains(pr.Body, bad) {
		t.Errorf("#%d proposes the failed digest again", pr.Index)
	}
}

// refuseRecordedRollbacks makes the API server refuse every write of a
// ledger that records a rollback's pull request, and returns once it
// does; the function returned lifts it.
func (r *releaseRig) refuseRecordedRollbacks() func() {
	r.t.Helper()
	k := r.peers.Kube.AdmissionregistrationV1()
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-recorded-rollbacks"},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: `!has(object.data) || !('ledger.json' in object.data) || !object.data['ledger.json'].matches('"rollback":\\{"pr":[1-9]')`,
				Message:    "the test refuses to record a rollback's pull request",
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-recorded-rollbacks"},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": "pinbot-system"},
			}},
		},
	}
	if _, err := k.ValidatingAdmissionPolicies().Create(r.ctx, policy, metav1.CreateOptions{}); err != nil {
		r.t.Fatal(err)
	}
	if _, err := k.ValidatingAdmissionPolicyBindings().Create(r.ctx, binding, metav1.CreateOptions{}); err != nil {
		r.t.Fatal(err)
	}
	probe := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "probe-recorded-rollback", Namespace: "pinbot-system"},
		Data:       map[string]string{"ledger.json": `{"envs":{"prod":{"x":{"rollback":{"pr":7}}}}}`},
	}
	poll.Until(r.t, time.Minute, "the API server refusing a recorded rollback", func() (bool, string) {
		_, err := r.peers.Kube.CoreV1().ConfigMaps("pinbot-system").Create(r.ctx, probe, metav1.CreateOptions{})
		if err == nil {
			_ = r.peers.Kube.CoreV1().ConfigMaps("pinbot-system").Delete(r.ctx, probe.Name, metav1.DeleteOptions{})
			return false, "accepted"
		}
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), err.Error()
	})
	return func() {
		if err := k.ValidatingAdmissionPolicyBindings().Delete(r.ctx, binding.Name, metav1.DeleteOptions{}); err != nil {
			r.t.Fatal(err)
		}
		poll.Until(r.t, time.Minute, "the API server accepting a recorded rollback again", func() (bool, string) {
			_, err := r.peers.Kube.CoreV1().ConfigMaps("pinbot-system").Create(r.ctx, probe, metav1.CreateOptions{})
			if err != nil {
				return false, err.Error()
			}
			return r.peers.Kube.CoreV1().ConfigMaps("pinbot-system").Delete(r.ctx, probe.Name, metav1.DeleteOptions{}) == nil, ""
		})
	}
}
