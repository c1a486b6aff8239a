package e2e_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// The real kubelet writes the Pod status pinbot proves here: kubemark's
// hollow node, which is Kubernetes' kubelet with a fake container runtime
// and the project's image service (hack/tools/kube/hollow-kubelet). Its
// pull policy, image manager, pull-secret keyring and status manager are
// the kubelet's own; the image service pulls from Gitea's registry and
// names what it pulled in one runtime's imageID form.
//
// The other e2e tests run Pods on the simulator (kubeletsim): a node that
// keeps a stale image although Git pins a digest, readiness that never
// comes, a foreign platform. The hollow kubelet cannot play those: its
// prober says Ready always, it pulls by digest when Git pins one, and it is
// a node of the host's platform.

// hollowNode starts a real kubelet; the test's end stops it and deletes
// its Node.
func hollowNode(t *testing.T, opts kube.KubeletOptions) {
	t.Helper()
	needPeers(t)
	node := opts.Node
	k, err := env.Cluster.StartHollowKubelet(testCtx, opts)
	if err != nil {
		t.Fatalf("starting the hollow kubelet %s: %s", node, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kubelet %s:\n%s", node, k.Tail(30))
		}
		_ = k.Stop()
		_ = env.Kube.CoreV1().Nodes().Delete(testCtx, node, metav1.DeleteOptions{})
	})
}

// pullSecret creates the docker-registry Secret "pull" in namespace ns with
// the Gitea registry's credentials for host: the kubelet hands them to the
// image service for images of host, as it hands them to containerd.
func pullSecret(t *testing.T, ns, host string) {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(env.Gitea.AdminUser + ":" + env.Gitea.Token))
	cfg, err := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{"auth": auth}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kube.CoreV1().Secrets(ns).Create(testCtx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "pull"},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: cfg},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// onNode is a Deployment named name of one Pod on node, running image with
// pull policy policy and the "pull" Secret.
func onNode(name, node, image, policy string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %s}
spec:
  replicas: 1
  selector:
    matchLabels: {app: %s}
  template:
    metadata:
      labels: {app: %s}
    spec:
      nodeName: %s
      imagePullSecrets: [{name: pull}]
      containers:
        - name: app
          image: %s
          imagePullPolicy: %s
`, name, name, name, node, image, policy)
}

// startPinbot runs pinbot as the app's deployer: it applies path app/ of
// the app's repository into its namespace.
func (a *app) startPinbot() {
	a.start(fmt.Sprintf("repo: %s\n    branch: main\n    path: app\n    namespace: %s\n    allowNamespaces: [%s]\n    syncPolicy: {automated: true}",
		env.Gitea.RepoURL(org, a.name), a.name, a.name))
}

// byWorkload indexes an app's container verdicts by their Deployment's
// name.
func byWorkload(v *verdict.Verification) map[string]verdict.ContainerVerdict {
	out := map[string]verdict.ContainerVerdict{}
	for _, c := range v.Containers {
		out[c.Workload[strings.LastIndex(c.Workload, "/")+1:]] = c
	}
	return out
}

// Git pins a multi-platform index; three kubelets report it in the three
// imageID forms runtimes use, and each proves it: the index itself, the
// host platform's child and that child's config digest.
func TestRealKubeletImageIDForms(t *testing.T) {
	const name = "kubelet-forms"
	forms := []string{kube.RepoDigest, kube.PlatformDigest, kube.ConfigDigest}
	for _, f := range forms {
		hollowNode(t, kube.KubeletOptions{Node: name + "-" + f, ImageIDForm: f})
	}
	repo := env.Gitea.RegistryHost + "/" + org + "/" + name
	idx, err := env.Gitea.PushRandomIndex(repo + ":v1")
	if err != nil {
		t.Fatal(err)
	}
	child, ok := idx.Children[runtime.GOARCH]
	if !ok {
		t.Fatalf("the index has no child for the host's %s: %v", runtime.GOARCH, idx.Children)
	}
	files := map[string]string{}
	for _, f := range forms {
		files["app/"+f+".yaml"] = onNode(f, name+"-"+f, repo+":v1@"+idx.Digest, "IfNotPresent")
	}
	a, _ := newApp(t, name, files)
	pullSecret(t, name, env.Gitea.RegistryHost)
	a.startPinbot()
	st, v := a.waitStatus("each form proves the index", func(st *status.App, v *verdict.Verification) bool {
		return st.Verified && len(v.Containers) == len(forms)
	})
	got := byWorkload(v)
	for _, tc := range []struct{ form, running, reason string }{
		{kube.RepoDigest, idx.Digest, ""},
		{kube.PlatformDigest, child, "child of the pinned index"},
		{kube.ConfigDigest, idx.Configs[runtime.GOARCH], "config digest"},
	} {
		c := got[tc.form]
		if c.Verdict != verdict.Verified || c.RunningDigest != tc.running || c.GitDigest != idx.Digest || !strings.Contains(c.Reason, tc.reason) {
			t.Errorf("%s: %s running %s git %s (%s), want Verified running %s", tc.form, c.Verdict, c.RunningDigest, c.GitDigest, c.Reason, tc.running)
		}
	}
	if t.Failed() {
		t.Log(describe(st, v))
	}
}

// A tag moves between two nodes' pulls. By tag alone, the node that
// pulled first keeps running the old image (IfNotPresent), the other runs
// the new one, and pinbot proves neither: the image is not pinned. Pinned
// by digest, both kubelets pull the digest and pinbot proves it.
func TestRealKubeletMovedTag(t *testing.T) {
	const name = "kubelet-tag"
	early, late := name+"-early", name+"-late"
	hollowNode(t, kube.KubeletOptions{Node: early})
	repo, v1 := pushImage(t, name, "stable")
	a, _ := newApp(t, name, map[string]string{"app/early.yaml": onNode("early", early, repo+":stable", "IfNotPresent")})
	pullSecret(t, name, env.Gitea.RegistryHost)
	a.startPinbot()
	a.waitStatus("the early node runs v1 by tag", func(_ *status.App, v *verdict.Verification) bool {
		c := byWorkload(v)["early"]
		return c.RunningDigest == v1
	})

	_, v2 := pushImage(t, name, "stable") // the tag moves
	hollowNode(t, kube.KubeletOptions{Node: late})
	a.push(map[string]string{"app/late.yaml": onNode("late", late, repo+":stable", "IfNotPresent")}, "Run stable on a second node")
	st, v := a.waitStatus("the late node runs v2 by the same tag", func(_ *status.App, v *verdict.Verification) bool {
		return byWorkload(v)["late"].RunningDigest == v2
	})
	for _, c := range v.Containers {
		if c.Verdict != verdict.Unknown || !strings.Contains(c.Reason, "not pinned by digest") {
			t.Errorf("%s: %s (%s), want Unknown: not pinned", c.Workload, c.Verdict, c.Reason)
		}
	}
	if byWorkload(v)["early"].RunningDigest != v1 || st.Verified {
		t.Errorf("the early node should still run v1 and nothing be proven: %s", describe(st, v))
	}

	pin := repo + ":stable@" + v2
	a.push(map[string]string{
		"app/early.yaml": onNode("early", early, pin, "IfNotPresent"),
		"app/late.yaml":  onNode("late", late, pin, "IfNotPresent"),
	}, "Pin stable by digest")
	_, v = a.waitStatus("both nodes prove v2", func(st *status.App, v *verdict.Verification) bool {
		return st.Verified && len(v.Containers) == 2
	})
	for _, c := range v.Containers {
		if c.RunningDigest != v2 {
			t.Errorf("%s runs %s, want %s", c.Workload, c.RunningDigest, v2)
		}
	}
}

// A node pulls through a registry mirror (a containerd hosts.toml): the
// Pod names a registry that does not answer, the kubelet's image service
// pulls from Gitea's, and the imageID keeps the name the Pod used. pinbot
// proves the pin without reaching the upstream registry, since the imageID
// names the pinned digest itself.
func TestRealKubeletPullsThroughAMirror(t *testing.T) {
	const name = "kubelet-mirror"
	upstream := "upstream.invalid:5000"
	needPeers(t)
	hollowNode(t, kube.KubeletOptions{Node: name, Mirrors: map[string]string{upstream: env.Gitea.RegistryHost}})
	_, digest := pushImage(t, name, "v1")
	pinned := upstream + "/" + org + "/" + name + "@" + digest
	a, _ := newApp(t, name, map[string]string{"app/web.yaml": onNode("web", name, pinned, "IfNotPresent")})
	pullSecret(t, name, upstream)
	a.startPinbot()
	_, v := a.waitStatus("the mirrored pull is proven", func(st *status.App, v *verdict.Verification) bool {
		return st.Verified && len(v.Containers) == 1
	})
	if c := v.Containers[0]; c.Image != upstream+"/"+org+"/"+name || c.RunningDigest != digest || c.RunningRepository != "" {
		t.Errorf("container %+v, want %s running %s under the Pod's own name", c, c.Image, digest)
	}
}

// Git pins a digest the registry does not have: the real kubelet's pull
// fails, its image manager backs off, and pinbot reports the app Degraded
// with the kubelet's own waiting reason, the container Pending, never
// Verified.
func TestRealKubeletFailedPull(t *testing.T) {
	const name = "kubelet-missing"
	hollowNode(t, kube.KubeletOptions{Node: name})
	repo, _ := pushImage(t, name, "v1")
	ghost := repo + "@sha256:" + strings.Repeat("0", 64)
	a, _ := newApp(t, name, map[string]string{"app/web.yaml": onNode("web", name, ghost, "IfNotPresent")})
	pullSecret(t, name, env.Gitea.RegistryHost)
	a.startPinbot()
	st, v := a.waitStatus("the failed pull is Degraded", func(st *status.App, v *verdict.Verification) bool {
		return st.Health == verdict.Degraded && len(v.Containers) == 1
	})
	c := v.Containers[0]
	if st.Verified || c.Verdict != verdict.Pending || c.Waiting != "ErrImagePull" && c.Waiting != "ImagePullBackOff" {
		t.Errorf("container %s (%s), waiting %q: want Pending on the kubelet's pull error", c.Verdict, c.Reason, c.Waiting)
	}
	if !strings.Contains(st.HealthReason, "Deployment "+name+"/web: pod web-") || !strings.Contains(st.HealthReason, "ImagePull") {
		t.Errorf("health reason %q, want the Pod's pull error", st.HealthReason)
	}
}
