package e2e_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// TestFluxDeploysWhatPinbotProves: a plain Kustomization. Each merge in
// Gitea reaches Verified through the real source-controller and
// kustomize-controller, pinbot applying nothing; a merge the controller has
// not applied (the Kustomization suspended) is pending, not failed; a node
// that kept the old image is a mismatch.
func TestFluxDeploysWhatPinbotProves(t *testing.T) {
	repo, v1 := pushImage(t, "fx-plain", "v1")
	_, v2 := pushImage(t, "fx-plain", "v2")
	_, v3 := pushImage(t, "fx-plain", "v3")
	a, first := newFluxApp(t, "fx-plain", map[string]string{"deploy/web.yaml": deployment(2, repo+":v1@"+v1)}, "deploy", "")

	a.waitApplied(first)
	st, v := a.waitStatus("verified at the first commit", func(st *status.App, v *verdict.Verification) bool {
		return st.Commit == first && v != nil && v.Verified
	})
	if st.Source != "flux" || st.DeployedCommit != first || st.Sync != status.Synced || st.Health != verdict.Healthy {
		t.Errorf("status at the first commit: %s", describe(st, v))
	}
	for _, c := range v.Containers {
		if c.RunningDigest != v1 {
			t.Errorf("container %s/%s runs %s, want %s", c.Pod, c.Container, c.RunningDigest, v1)
		}
	}
	a.waitCommitStatus(first, "success on the first commit", func(s *gitforge.Status) bool { return s.State == "success" })

	// A merge the controller does not apply: pinbot says it waits for
	// Flux, and does not call it a failure.
	a.patchKustomization(`{spec: {suspend: true}}`)
	held := a.push(map[string]string{"deploy/web.yaml": deployment(2, repo+":v2@"+v2)}, "Promote fx-plain to v2")
	a.waitCommitStatus(held, "pending while Flux is suspended", func(s *gitforge.Status) bool {
		return s.State == "pending" && strings.Contains(s.Description, "Flux has not applied "+held+" yet")
	})
	st, v = a.waitStatus("pending behind the merge", func(st *status.App, v *verdict.Verification) bool {
		return st.Commit == held && st.DeployedCommit == first && v != nil && !v.Verified
	})
	if st.Sync != status.OutOfSync {
		t.Errorf("behind the merge: %s", describe(st, v))
	}

	// Flux resumes and applies it; the rollout reaches the proof.
	a.patchKustomization(`{spec: {suspend: false}}`)
	a.waitApplied(held)
	got := a.waitCommitStatus(held, "success once Flux applies v2", func(s *gitforge.Status) bool { return s.State == "success" })
	if want := "2/2 Pods run " + v2[:len("sha256:")+12] + "…"; got.Description != want {
		t.Errorf("commit status %q, want %q", got.Description, want)
	}

	// Flux applies v3 on a node that kept v2: a mismatch, named.
	if err := env.Node.StaleImage(repo, v2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Node.StaleImage(repo, "") })
	third := a.push(map[string]string{"deploy/web.yaml": deployment(2, repo+":v3@"+v3)}, "Promote fx-plain to v3")
	a.waitApplied(third)
	a.waitCommitStatus(third, "failure on the stale node", func(s *gitforge.Status) bool {
		return s.State == "failure" && strings.Contains(s.Description, "Mismatch")
	})
}

// TestFluxRendersWhatTheControllerRenders: the three ways a Flux app's
// digest reaches its Pods besides a literal image line, each rendered by
// the real kustomize-controller and by pinbot: kustomize's images: in
// the repository's kustomization.yaml, the Kustomization's own
// spec.images, and postBuild substitution from spec.postBuild.substitute
// and a ConfigMap (substituteFrom). pinbot must expect, per container,
// the digest the controller applied; a promotion of the kustomize pin
// reaches Verified.
func TestFluxRendersWhatTheControllerRenders(t *testing.T) {
	web, web1 := pushImage(t, "fx-render-web", "v1")
	_, web2 := pushImage(t, "fx-render-web", "v2")
	side, side1 := pushImage(t, "fx-render-side", "v1")
	worker, worker1 := pushImage(t, "fx-render-worker", "v1")
	kustomization := func(digest string) string {
		return "resources: [web.yaml, worker.yaml]\nimages:\n  - name: " + web + "\n    digest: " + digest + "\n"
	}
	files := map[string]string{
		"deploy/kustomization.yaml": kustomization(web1),
		"deploy/web.yaml": strings.Replace(deployment(1, web+":latest"), "          image: "+web+":latest\n",
			"          image: "+web+":latest\n        - name: side\n          image: "+side+":latest\n", 1),
		"deploy/worker.yaml": strings.NewReplacer("name: web", "name: worker", "{app: web}", "{app: worker}").
			Replace(deployment(1, "${worker_repo}@${worker_digest}")),
	}
	if _, err := env.Kube.CoreV1().ConfigMaps(kube.FluxNamespace).Create(testCtx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "fx-render-pins"},
		Data:       map[string]string{"worker_digest": worker1},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a, first := newFluxApp(t, "fx-render", files, "deploy", fmt.Sprintf(`  images:
    - {name: %s, digest: %s}
  postBuild:
    substitute: {worker_repo: %s}
    substituteFrom:
      - {kind: ConfigMap, name: fx-render-pins}
`, side, side1, worker))

	a.waitApplied(first)
	_, v := a.waitStatus("verified at the first commit", func(st *status.App, v *verdict.Verification) bool {
		return st.Commit == first && v != nil && v.Verified
	})
	want := map[string]string{"app": web1, "side": side1}
	got := map[string]string{}
	for _, c := range v.Containers {
		if strings.HasPrefix(c.Pod, "worker-") {
			got["worker"] = c.GitDigest
		} else {
			got[c.Container] = c.GitDigest
		}
		if c.RunningDigest != c.GitDigest {
			t.Errorf("container %s/%s runs %s, Git pins %s", c.Pod, c.Container, c.RunningDigest, c.GitDigest)
		}
	}
	want["worker"] = worker1
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("digests pinbot expects = %v, want %v (what the controller applied)", got, want)
	}
	a.waitCommitStatus(first, "success on the first commit", func(s *gitforge.Status) bool { return s.State == "success" })

	// Promote the kustomize pin: the controller renders and applies v2.
	merge := a.push(map[string]string{"deploy/kustomization.yaml": kustomization(web2)}, "Promote fx-render-web to v2")
	a.waitApplied(merge)
	a.waitCommitStatus(merge, "success on the promotion", func(s *gitforge.Status) bool { return s.State == "success" })
	_, v = a.waitStatus("verified on v2", func(st *status.App, v *verdict.Verification) bool {
		return st.Commit == merge && v != nil && v.Verified
	})
	for _, c := range v.Containers {
		if strings.HasPrefix(c.Pod, "web-") && c.Container == "app" && c.RunningDigest != web2 {
			t.Errorf("container %s/%s runs %s, want %s", c.Pod, c.Container, c.RunningDigest, web2)
		}
	}
}

// TestFluxAppliesToAnotherCluster: the Kustomization's spec.kubeConfig
// names a Secret with another cluster's kubeconfig; the real
// kustomize-controller applies there, and pinbot, reading the same
// Secret, proves the Pods of that cluster, never the hub's.
func TestFluxAppliesToAnotherCluster(t *testing.T) {
	spoke, _ := startSpoke(t, "fx-spoke")
	kc, err := os.ReadFile(spoke.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.CoreV1().Secrets(kube.FluxNamespace).Create(testCtx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "fx-spoke-kubeconfig"},
		Data:       map[string][]byte{"value": kc},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	repo, v1 := pushImage(t, "fx-spoke", "v1")
	_, v2 := pushImage(t, "fx-spoke", "v2")
	a, first := newFluxApp(t, "fx-spoke", map[string]string{"deploy/web.yaml": deployment(2, repo+"@"+v1)}, "deploy",
		"  kubeConfig: {secretRef: {name: fx-spoke-kubeconfig}}\n")
	a.waitApplied(first)
	a.waitVerifiedOn("verified on the spoke", first, "spoke-amd64", v1)
	if _, err := env.Kube.AppsV1().Deployments("fx-spoke").Get(testCtx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the hub has Deployment fx-spoke/web (err %v): Flux should have applied to the spoke only", err)
	}

	merge := a.push(map[string]string{"deploy/web.yaml": deployment(2, repo+"@"+v2)}, "Promote fx-spoke to v2")
	a.waitApplied(merge)
	got := a.waitCommitStatus(merge, "success on the spoke", func(s *gitforge.Status) bool { return s.State == "success" })
	if want := "2/2 Pods run " + v2[:len("sha256:")+12] + "…"; got.Description != want {
		t.Errorf("commit status %q, want %q", got.Description, want)
	}
}
