package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/serve/proofs"
)

// TestFluxWavesWaitOnTheProof: the real kustomize-controller gates a
// second wave on pinbot's proof of the first, with no code of pinbot's in
// Flux: the first Kustomization's healthChecks name its app's Proof, and
// the second dependsOn the first. While a stale node runs the old image
// (every Pod Ready, so health alone says yes), the Proof is Stalled, the
// first Kustomization is not Ready, and the second applies nothing. Once
// a rollout runs the digest Git pins, the Proof is Ready and the second
// wave applies.
func TestFluxWavesWaitOnTheProof(t *testing.T) {
	repo, v0 := pushImage(t, "fx-proof", "v0")
	_, v1 := pushImage(t, "fx-proof", "v1")
	_, v2 := pushImage(t, "fx-proof", "v2")
	if err := env.Cluster.InstallCRDs(testCtx, filepath.Join("..", "charts", "pinbot", "crds", "proofs.pinbot.dev.yaml")); err != nil {
		t.Fatal(err)
	}
	// The node keeps v0 whatever Git pins: the Pods are Ready, and wrong.
	if err := env.Node.StaleImage(repo, v0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Node.StaleImage(repo, "") })
	gate := `  timeout: 40s
  retryInterval: 5s
  healthChecks:
    - {apiVersion: pinbot.dev/v1, kind: Proof, name: fx-proof, namespace: fx-proof}
`
	a, _ := newFluxApp(t, "fx-proof", map[string]string{
		"deploy/web.yaml":  deployment(2, repo+":v1@"+v1),
		"next/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: next-wave}\ndata: {wave: \"2\"}\n",
	}, "deploy", gate)
	pub := proofs.New(env.dyn, a.r)
	a.r.OnProofChange(pub.Changed)
	go pub.Run(testCtx)
	pub.Changed(a.name) // a pass may have run before the hook
	a.create(kustomizationsRes, fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: fx-proof-next, namespace: flux-system}
spec:
  interval: 5s
  retryInterval: 5s
  prune: true
  path: ./next
  targetNamespace: fx-proof
  sourceRef: {kind: GitRepository, name: fx-proof}
  dependsOn: [{name: fx-proof}]
`))

	// Flux applied the commit, but records it applied (lastAppliedRevision)
	// only once its health checks pass.
	poll.Until(t, rollout, "the Proof stalled on the stale node, the first wave not Ready", func() (bool, string) {
		ready, reason := proofReady(t, "fx-proof")
		_, ks := a.kustomization()
		return ready == "False" && reason == "Mismatch" && strings.HasPrefix(ks, "False/HealthCheckFailed"), fmt.Sprintf("Proof %s/%s; Kustomization %s", ready, reason, ks)
	})
	if _, ready := kustomizationReady(t, "fx-proof-next"); !strings.Contains(ready, "dependency") {
		t.Errorf("the second wave: Ready %s, want it waiting on its dependency", ready)
	}
	if _, err := env.Kube.CoreV1().ConfigMaps("fx-proof").Get(testCtx, "next-wave", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the second wave applied while the first was unproven: %v", err)
	}

	// The node pulls what Git pins again; a rollout to v2 proves.
	if err := env.Node.StaleImage(repo, ""); err != nil {
		t.Fatal(err)
	}
	second := a.push(map[string]string{"deploy/web.yaml": deployment(2, repo+":v2@"+v2)}, "Promote fx-proof to v2")
	a.waitApplied(second)
	poll.Until(t, rollout, "the Proof Ready and the second wave applied", func() (bool, string) {
		ready, reason := proofReady(t, "fx-proof")
		_, err := env.Kube.CoreV1().ConfigMaps("fx-proof").Get(testCtx, "next-wave", metav1.GetOptions{})
		_, next := kustomizationReady(t, "fx-proof-next")
		return ready == "True" && err == nil, fmt.Sprintf("Proof %s/%s; next wave %s; its ConfigMap: %v", ready, reason, next, err)
	})
}

// proofReady is the Ready condition of the Proof of app, in the
// namespace named after it.
func proofReady(t *testing.T, app string) (status, reason string) {
	t.Helper()
	return proofReadyOn(t, env.dyn, app)
}

// proofReadyOn is proofReady on the cluster dyn reaches.
func proofReadyOn(t *testing.T, dyn dynamic.Interface, app string) (status, reason string) {
	t.Helper()
	u, err := dyn.Resource(proofs.GVR).Namespace(app).Get(testCtx, app, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "absent", ""
	}
	if err != nil {
		t.Fatal(err)
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == proofs.Ready {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"])
		}
	}
	return "none", ""
}

// kustomizationReady reads a Kustomization's last applied revision and
// Ready condition.
func kustomizationReady(t *testing.T, name string) (applied, ready string) {
	t.Helper()
	u, err := env.dyn.Resource(kustomizationsRes).Namespace(kube.FluxNamespace).Get(testCtx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	applied, _, _ = unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Ready" {
			ready = fmt.Sprintf("%v/%v: %v", m["status"], m["reason"], m["message"])
		}
	}
	return applied, ready
}

// TestArgoCDHealthIsTheProof: with the health check docs/waves.md
// gives, read from the page into the real Argo CD's argocd-cm, an
// Application whose path holds its Proof is Degraded while a stale node
// runs the old image, though its Deployment is Healthy (health alone
// would let the next wave go), and Healthy once the Pods run the digest
// Git pins.
func TestArgoCDHealthIsTheProof(t *testing.T) {
	repo, v0 := pushImage(t, "ar-proof", "v0")
	_, v1 := pushImage(t, "ar-proof", "v1")
	_, v2 := pushImage(t, "ar-proof", "v2")
	argoProofHealth(t, env.Cluster)
	if err := env.Node.StaleImage(repo, v0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Node.StaleImage(repo, "") })
	proof := "apiVersion: pinbot.dev/v1\nkind: Proof\nmetadata: {name: ar-proof}\nspec: {app: ar-proof}\n"
	a, first := newArgoApp(t, "ar-proof", map[string]string{"deploy/web.yaml": deployment(2, repo+":v1@"+v1), "deploy/proof.yaml": proof}, "    path: deploy\n")
	pub := proofs.New(env.dyn, a.r)
	a.r.OnProofChange(pub.Changed)
	go pub.Run(testCtx)
	pub.Changed(a.name)

	a.waitSynced(first)
	// Argo CD 3 keeps no per-resource health in the Application; the
	// Deployment's own status says its Pods are all Ready.
	poll.Until(t, rollout, "the Application Degraded by its Proof, every Pod Ready", func() (bool, string) {
		app := argoHealth(t, a.name)
		d, err := env.Kube.AppsV1().Deployments(a.name).Get(testCtx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready, _ := proofReady(t, a.name)
		return app == "Degraded" && ready == "False" && d.Status.ReadyReplicas == 2 && d.Status.UpdatedReplicas == 2,
			fmt.Sprintf("Application %s, Proof Ready %s, Deployment %d/%d ready", app, ready, d.Status.ReadyReplicas, d.Status.Replicas)
	})
	if err := env.Node.StaleImage(repo, ""); err != nil {
		t.Fatal(err)
	}
	second := a.push(map[string]string{"deploy/web.yaml": deployment(2, repo+":v2@"+v2), "deploy/proof.yaml": proof}, "Promote ar-proof to v2")
	a.waitSynced(second)
	poll.Until(t, rollout, "the Application Healthy once proven", func() (bool, string) {
		app := argoHealth(t, a.name)
		ready, reason := proofReady(t, a.name)
		return app == "Healthy" && ready == "True", fmt.Sprintf("Application %s, Proof %s/%s", app, ready, reason)
	})
}

// TestArgoCDSpokeHealthIsTheProof: an Application that Argo CD syncs to
// another cluster has its Proof there, beside its Pods, where Argo CD
// reads its health: pinbot writes it on the spoke, with the client it
// reads the spoke with, and none on the hub. Degraded while the spoke's
// node runs the old image, Healthy once proven: an ApplicationSet's
// RollingSync over clusters waits on the proof of each.
func TestArgoCDSpokeHealthIsTheProof(t *testing.T) {
	spoke, node := argoCluster(t, "ar-spoke")
	spokeDyn := dynamic.NewForConfigOrDie(spoke.Config())
	repo, v0 := pushImage(t, "ar-spoke", "v0")
	_, v1 := pushImage(t, "ar-spoke", "v1")
	_, v2 := pushImage(t, "ar-spoke", "v2")
	argoProofHealth(t, env.Cluster, spoke)
	if err := node.StaleImage(repo, v0); err != nil {
		t.Fatal(err)
	}
	proof := "apiVersion: pinbot.dev/v1\nkind: Proof\nmetadata: {name: ar-spoke}\nspec: {app: ar-spoke}\n"
	a, first := newArgoAppTo(t, "ar-spoke", map[string]string{"deploy/web.yaml": deployment(2, repo+":v1@"+v1), "deploy/proof.yaml": proof}, "    path: deploy\n", spoke.Config().Host)
	pub := proofs.New(env.dyn, a.r)
	a.r.OnProofChange(pub.Changed)
	go pub.Run(testCtx)
	pub.Changed(a.name)

	a.waitSynced(first)
	poll.Until(t, rollout, "the Application Degraded by its Proof on the spoke", func() (bool, string) {
		app := argoHealth(t, a.name)
		ready, reason := proofReadyOn(t, spokeDyn, a.name)
		return app == "Degraded" && ready == "False", fmt.Sprintf("Application %s, the spoke's Proof %s/%s", app, ready, reason)
	})
	if err := node.StaleImage(repo, ""); err != nil {
		t.Fatal(err)
	}
	second := a.push(map[string]string{"deploy/web.yaml": deployment(2, repo+":v2@"+v2), "deploy/proof.yaml": proof}, "Promote ar-spoke to v2")
	a.waitSynced(second)
	poll.Until(t, rollout, "the Application Healthy once proven on the spoke", func() (bool, string) {
		app := argoHealth(t, a.name)
		ready, reason := proofReadyOn(t, spokeDyn, a.name)
		return app == "Healthy" && ready == "True", fmt.Sprintf("Application %s, the spoke's Proof %s/%s", app, ready, reason)
	})
	if ready, _ := proofReady(t, a.name); ready != "absent" {
		t.Errorf("the hub has a Proof of the spoke's app (Ready %s); want it on the spoke only", ready)
	}
}

// argoProofHealth installs the Proof CRD on clusters and gives Argo CD
// the health check docs/waves.md shows, read from the page.
func argoProofHealth(t *testing.T, clusters ...*kube.Cluster) {
	t.Helper()
	for _, c := range clusters {
		if err := c.InstallCRDs(testCtx, filepath.Join("..", "charts", "pinbot", "crds", "proofs.pinbot.dev.yaml")); err != nil {
			t.Fatal(err)
		}
	}
	patch, err := json.Marshal(map[string]any{"data": argoHealthFromDocs(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.CoreV1().ConfigMaps("argocd").Patch(testCtx, "argocd-cm", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// argoHealthFromDocs is the argocd-cm data docs/waves.md shows.
func argoHealthFromDocs(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "waves.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		if !strings.Contains(m[1], "kind: ConfigMap") {
			continue
		}
		var cm struct {
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal([]byte(m[1]), &cm); err != nil {
			t.Fatal(err)
		}
		return cm.Data
	}
	t.Fatal("docs/waves.md shows no argocd-cm")
	return nil
}

// argoHealth is an Application's health.
func argoHealth(t *testing.T, name string) string {
	t.Helper()
	_, health := argoApp(t, name)
	return health
}
