package e2e_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/serve/proofs"
)

var applicationSetsRes = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"}

// TestApplicationSetRollingSyncWaitsOnTheProof: the real
// applicationset-controller rolls two ApplicationSets out over three
// clusters in three RollingSync steps (pinbot's own cluster, then two
// spokes), each step once the one before is Healthy. In the first, each
// cluster's path in Git holds its app's Proof, and argocd-cm the health
// check docs/waves.md gives; pinbot writes each Proof on the cluster its
// Pods run on. So Healthy means proven: while the second cluster's node
// runs the old image (every Pod Ready), its Application is Degraded and
// the third step never syncs; once that node's Pods run the digest Git
// pins, the rollout walks on to the end. The second set, the same without
// the Proof, walks to the third cluster on health alone while the second
// runs the old image.
func TestApplicationSetRollingSyncWaitsOnTheProof(t *testing.T) {
	east, eastNode := argoCluster(t, "as-east")
	west, _ := argoCluster(t, "as-west")
	clusters := []*kube.Cluster{env.Cluster, east, west}
	argoProofHealth(t, clusters...)
	proven := newRollingSet(t, "as", clusters, true)
	health := newRollingSet(t, "hs", clusters, false)
	var apps strings.Builder
	for _, n := range proven.apps {
		fmt.Fprintf(&apps, "  - name: %s\n    argocd: {application: %s, namespace: argocd}\n", n, n)
	}
	proven.a.r = startPinbot(t, apps.String())
	pub := proofs.New(env.dyn, proven.a.r)
	proven.a.r.OnProofChange(pub.Changed)
	go pub.Run(testCtx)
	proven.walked("the first rollout walked all three steps, each proven", proven.first)
	health.walked("the first rollout walked all three steps on health", health.first)

	// The second cluster's node keeps v1 whatever Git pins.
	for _, s := range []*rollingSet{proven, health} {
		if err := eastNode.StaleImage(s.image, s.v1); err != nil {
			t.Fatal(err)
		}
	}
	second, healthSecond := proven.push(), health.push()
	poll.Until(t, 2*rollout, "on health alone, the third step synced while the second runs v1", func() (bool, string) {
		rev, h := argoApp(t, "hs-west")
		return rev == healthSecond && h == "Healthy", fmt.Sprintf("hs-west at %.8s %s; steps %s", rev, h, rollingStatus(t, "hs"))
	})
	if got := runningDigest(t, east, "hs-east"); got != health.v1 {
		t.Errorf("the second cluster's Pods run %s; want v1, %s (the stale node)", got, health.v1)
	}
	poll.Until(t, 2*rollout, "on proof, step 1 proven, step 2 Degraded by its Proof, step 3 waiting", func() (bool, string) {
		hubRev, hub := argoApp(t, "as-hub")
		eastRev, eastHealth := argoApp(t, "as-east")
		westRev, _ := argoApp(t, "as-west")
		steps := rollingStatus(t, "as")
		return hubRev == second && hub == "Healthy" && eastRev == second && eastHealth == "Degraded" && westRev == proven.first && strings.Contains(steps, "as-west=Waiting"),
			fmt.Sprintf("as-hub at %.8s %s; as-east at %.8s %s; as-west at %.8s; steps %s", hubRev, hub, eastRev, eastHealth, westRev, steps)
	})
	if img := deployedImage(t, west, "as-west"); img != proven.image+"@"+proven.v1 {
		t.Errorf("the third cluster runs %s; want v1 still, its step never synced", img)
	}

	// The node is mended and its Pods restarted: they run v2, as Git
	// pins, and the rollout walks on.
	if err := eastNode.StaleImage(proven.image, ""); err != nil {
		t.Fatal(err)
	}
	if err := kubernetes.NewForConfigOrDie(east.Config()).CoreV1().Pods("as-east").DeleteCollection(testCtx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=web"}); err != nil {
		t.Fatal(err)
	}
	proven.walked("the rollout walked on to the third cluster once the second proved", second)
}

// rollingSet is an ApplicationSet over clusters, one RollingSync step
// each, in order; its apps are PREFIX-hub, PREFIX-east and PREFIX-west,
// each deploying envs/APP/ of the Git repository PREFIX-web into
// namespace APP, with the app's Proof when proven.
type rollingSet struct {
	t        *testing.T
	prefix   string
	apps     []string
	clusters []*kube.Cluster
	proof    bool
	a        *app
	image    string
	v1, v2   string
	first    string
}

func newRollingSet(t *testing.T, prefix string, clusters []*kube.Cluster, proof bool) *rollingSet {
	t.Helper()
	s := &rollingSet{t: t, prefix: prefix, clusters: clusters, proof: proof,
		apps: []string{prefix + "-hub", prefix + "-east", prefix + "-west"}}
	name := prefix + "-web"
	s.image, s.v1 = pushImage(t, name, "v1")
	_, s.v2 = pushImage(t, name, "v2")
	var err error
	if s.first, err = env.Gitea.CreateRepoWith(testCtx, org, name, "main", s.files(s.v1)); err != nil {
		t.Fatal(err)
	}
	s.a = &app{t: t, name: name, repo: gitforge.Repo{Owner: org, Name: name}}
	url := env.Gitea.RepoURL(org, name)
	s.a.argoRepoSecret(url)
	s.a.refresh = func() {
		for _, n := range s.apps {
			if _, err := env.dyn.Resource(applicationsRes).Namespace(kube.ArgoCDNamespace).Patch(testCtx, n, types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"normal"}}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	s.a.create(applicationSetsRes, fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata: {name: %s, namespace: argocd}
spec:
  goTemplate: true
  generators:
    - list:
        elements:
          - {name: %s, server: "https://kubernetes.default.svc", step: "1"}
          - {name: %s, server: %q, step: "2"}
          - {name: %s, server: %q, step: "3"}
  strategy:
    type: RollingSync
    rollingSync:
      steps:
        - matchExpressions: [{key: step, operator: In, values: ["1"]}]
        - matchExpressions: [{key: step, operator: In, values: ["2"]}]
        - matchExpressions: [{key: step, operator: In, values: ["3"]}]
  template:
    metadata:
      name: '{{.name}}'
      labels: {step: '{{.step}}', set: %s}
    spec:
      project: default
      source: {repoURL: %q, targetRevision: main, path: 'envs/{{.name}}'}
      destination: {server: '{{.server}}', namespace: '{{.name}}'}
      syncPolicy: {syncOptions: [CreateNamespace=true]}
`, prefix, s.apps[0], s.apps[1], clusters[1].Config().Host, s.apps[2], clusters[2].Config().Host, prefix, url))
	poll.Until(t, rollout, "the ApplicationSet "+prefix+"'s three Applications", func() (bool, string) {
		list, err := env.dyn.Resource(applicationsRes).Namespace(kube.ArgoCDNamespace).List(testCtx, metav1.ListOptions{LabelSelector: "set=" + prefix})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 3, fmt.Sprintf("%d Applications", len(list.Items))
	})
	return s
}

// files are the set's paths in Git, pinning digest.
func (s *rollingSet) files(digest string) map[string]string {
	out := map[string]string{}
	for _, n := range s.apps {
		out["envs/"+n+"/web.yaml"] = deployment(2, s.image+"@"+digest)
		if s.proof {
			out["envs/"+n+"/proof.yaml"] = fmt.Sprintf("apiVersion: pinbot.dev/v1\nkind: Proof\nmetadata: {name: %s}\nspec: {app: %s}\n", n, n)
		}
	}
	return out
}

// push pins v2 in every cluster's path.
func (s *rollingSet) push() string {
	s.t.Helper()
	return s.a.push(s.files(s.v2), "Promote "+s.prefix+"-web to v2")
}

// walked waits until every step deployed commit and is Healthy (with a
// Ready Proof, on the cluster it runs on, when the set has one).
func (s *rollingSet) walked(what, commit string) {
	s.t.Helper()
	poll.Until(s.t, 2*rollout, what, func() (bool, string) {
		var state []string
		done := true
		for i, n := range s.apps {
			rev, health := argoApp(s.t, n)
			ready := "True"
			if s.proof {
				ready, _ = proofReadyOn(s.t, dynamic.NewForConfigOrDie(s.clusters[i].Config()), n)
			}
			done = done && rev == commit && health == "Healthy" && ready == "True"
			state = append(state, fmt.Sprintf("%s at %.8s %s, Proof %s", n, rev, health, ready))
		}
		return done, strings.Join(state, "; ") + "; steps " + rollingStatus(s.t, s.prefix)
	})
}

// argoApp is the revision an Application last deployed (its history's
// newest; status.sync.revision is what it compares with, deployed or
// not) and its health.
func argoApp(t *testing.T, name string) (deployed, health string) {
	t.Helper()
	u, err := env.dyn.Resource(applicationsRes).Namespace(kube.ArgoCDNamespace).Get(testCtx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if history, _, _ := unstructured.NestedSlice(u.Object, "status", "history"); len(history) > 0 {
		last, _ := history[len(history)-1].(map[string]any)
		deployed, _ = last["revision"].(string)
	}
	health, _, _ = unstructured.NestedString(u.Object, "status", "health", "status")
	return deployed, health
}

// rollingStatus is ApplicationSet name's progressive sync status, as
// "app=status" pairs.
func rollingStatus(t *testing.T, name string) string {
	t.Helper()
	u, err := env.dyn.Resource(applicationSetsRes).Namespace(kube.ArgoCDNamespace).Get(testCtx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "applicationStatus")
	var out []string
	for _, s := range list {
		m, _ := s.(map[string]any)
		out = append(out, fmt.Sprintf("%v=%v", m["application"], m["status"]))
	}
	return strings.Join(out, ",")
}

// deployedImage is the image of Deployment web in ns on c.
func deployedImage(t *testing.T, c *kube.Cluster, ns string) string {
	t.Helper()
	d, err := kubernetes.NewForConfigOrDie(c.Config()).AppsV1().Deployments(ns).Get(testCtx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// runningDigest is the digest the first Pod of Deployment web in ns on c
// runs, as its runtime reports it.
func runningDigest(t *testing.T, c *kube.Cluster, ns string) string {
	t.Helper()
	pods, err := kubernetes.NewForConfigOrDie(c.Config()).CoreV1().Pods(ns).List(testCtx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, st := range p.Status.ContainerStatuses {
			if i := strings.LastIndex(st.ImageID, "@"); i >= 0 {
				return st.ImageID[i+1:]
			}
		}
	}
	return "(no Pod runs)"
}
