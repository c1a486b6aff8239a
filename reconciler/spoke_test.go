package reconciler_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	sigsyaml "sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler/cluster"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// TestArgoCDSpoke: one Argo CD on the hub deploys to a spoke, a second
// real control plane with its own etcd, API server and node. pinbot reads
// the spoke's credentials from Argo CD's own cluster Secret on the hub
// and verifies the Pods there; a stale Pod on the spoke is a Mismatch; a
// spoke that stops answering makes only its app Unknown, naming the
// cluster, within the cluster timeout and without anyone asking, while an app on the hub stays Verified. The credentials show
// nowhere.
func TestArgoCDSpoke(t *testing.T) {
	spokeApp := newDeployerScenario(t, "hs-spoke", "argocd")
	hubApp := newDeployerScenario(t, "hs-hub", "argocd")

	sp, _, stop := startSpoke(t, "hs-spoke")
	// Argo CD's cluster Secret for the spoke, on the hub.
	spokeCfg := sp.Config()
	conf, _ := json.Marshal(map[string]any{"bearerToken": spokeCfg.BearerToken, "tlsClientConfig": map[string]any{"caData": spokeCfg.CAData}})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-spoke", Namespace: "argocd", Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
		StringData: map[string]string{"name": "spoke", "server": spokeCfg.Host, "config": string(conf)},
	}
	if _, err := env.kube.CoreV1().Secrets("argocd").Create(testCtx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	v1, stale := pushImage(t, "hs-app", "v1"), pushImage(t, "hs-app", "stale")
	for _, s := range []*deployerScenario{spokeApp, hubApp} {
		commit := s.push(map[string]string{"app/deploy.yaml": deployment(1, v1.ref())}, "Initial")
		s.createApplication("app", "main", "")
		if s == spokeApp {
			s.mergePatch(applicationsRes, "argocd", `{spec: {destination: {server: "`+spokeCfg.Host+`", namespace: hs-spoke}}}`)
			applyOn(t, dynamic.NewForConfigOrDie(sp.Config()), "hs-spoke", deployment(1, v1.ref()))
		} else {
			s.apply(deployment(1, v1.ref()))
		}
		s.argoSynced(commit, "web")
	}

	// One Reconciler for both apps.
	cfgText := "apps:\n  - name: hs-spoke\n    argocd: {application: hs-spoke}\n  - name: hs-hub\n    argocd: {application: hs-hub}\n"
	if err := os.WriteFile(spokeApp.cfg, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	spokeApp.reload()
	r := spokeApp.r
	hubApp.r = r

	_, v := spokeApp.waitStatus(rollout, "the spoke's app verified", func(_ *status.App, v *verdict.Verification) bool { return v != nil && v.Verified })
	for _, c := range v.Containers {
		if c.Node != "spoke-amd64" || c.RunningDigest != v1.digest {
			t.Errorf("container %+v; want it on the spoke's node, running %s", c, v1.digest)
		}
	}
	hubApp.waitStatus(rollout, "the hub's app verified", func(_ *status.App, v *verdict.Verification) bool { return v != nil && v.Verified })

	// A stale Pod on the spoke.
	applyOn(t, dynamic.NewForConfigOrDie(sp.Config()), "hs-spoke", deployment(1, stale.ref()))
	spokeApp.waitStatus(rollout, "a Mismatch on the spoke", func(_ *status.App, v *verdict.Verification) bool {
		return v != nil && !v.Verified && hasVerdict(v, verdict.Mismatch)
	})

	// The spoke stops answering. The loop says so by itself, within
	// the cluster's timeout (cluster.DefaultDownAfter) and a pass: no
	// one asks for the app's status.
	spokeApp.runLoop()
	stop()
	stopped := time.Now()
	poll.Until(t, 3*cluster.DefaultDownAfter, "the loop's status of the spoke's app Unknown", func() (bool, string) {
		last, _, err := r.Last("hs-spoke")
		if err != nil || last == nil {
			return false, fmt.Sprint(err)
		}
		return last.Proof == verdict.Unknown && strings.Contains(last.Error, "cluster spoke ("), fmt.Sprintf("%s: %s", last.Proof, last.Error)
	})
	t.Logf("the spoke's app Unknown %s after its control plane stopped", time.Since(stopped).Round(time.Millisecond))
	var st *status.App
	var ce *cluster.Error
	poll.Until(t, time.Minute, "the spoke's app Unknown, naming the cluster", func() (bool, string) {
		var err error
		st, _, err = r.Status(testCtx, "hs-spoke")
		return errors.As(err, &ce), fmt.Sprint(err)
	})
	if ce.Cluster != "spoke" || st == nil || st.Verified || !strings.Contains(st.Error, "cluster spoke (") {
		t.Errorf("the spoke's app: status %+v, error %v; want Unknown naming the cluster", st, ce)
	}
	if strings.Contains(st.Error, spokeCfg.BearerToken) || strings.Contains(ce.Error(), spokeCfg.BearerToken) {
		t.Errorf("the spoke's token shows: %s", st.Error)
	}
	if _, v, err := r.Status(testCtx, "hs-hub"); err != nil || v == nil || !v.Verified {
		t.Errorf("the hub's app while the spoke is down: %v, %+v; want it Verified still", err, v)
	}
}

// applyOn applies manifest (one Deployment) into ns as Argo CD's
// controller would.
func applyOn(t *testing.T, dyn dynamic.Interface, ns, manifest string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := sigsyaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace(ns)
	if _, err := dyn.Resource(deploymentsRes).Namespace(ns).Apply(testCtx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "argocd-controller", Force: true}); err != nil {
		t.Fatalf("applying %s: %s", u.GetName(), err)
	}
}

func hasVerdict(v *verdict.Verification, want verdict.Verdict) bool {
	for _, c := range v.Containers {
		if c.Verdict == want {
			return true
		}
	}
	return false
}

// startSpoke starts a second control plane with its own node, which
// pulls from the tests' Gitea registry, and creates namespace ns there.
// stop stops both (once); the test's end stops them otherwise.
func startSpoke(t *testing.T, ns string) (*kube.Cluster, *kubeletsim.Sim, func()) {
	t.Helper()
	needPeers(t)
	sp, err := kube.Start(testCtx, kube.Options{})
	if err != nil {
		t.Fatalf("starting the spoke's control plane: %s", err)
	}
	node := kubeletsim.New(sp.Config(), kubeletsim.WithNodeName("spoke-amd64"),
		kubeletsim.WithBasicAuth(env.gitea.RegistryHost, env.gitea.AdminUser, env.gitea.Token))
	var once sync.Once
	stop := func() {
		once.Do(func() {
			node.Stop()
			_ = sp.Stop()
		})
	}
	t.Cleanup(stop)
	if err := node.Start(testCtx); err != nil {
		t.Fatal(err)
	}
	spokeKube := kubernetes.NewForConfigOrDie(sp.Config())
	if _, err := spokeKube.CoreV1().Namespaces().Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return sp, node, stop
}

// TestFluxSpoke: a Flux Kustomization applies to another cluster through
// spec.kubeConfig.secretRef; pinbot reads that kubeconfig Secret from the
// Kustomization's namespace and verifies the Pods in that cluster.
func TestFluxSpoke(t *testing.T) {
	s := newDeployerScenario(t, "fx-spoke", "flux")
	sp, _, _ := startSpoke(t, "fx-spoke")
	createKubeConfigSecret(t, sp, "flux-system", "fx-spoke-kubeconfig", "value")
	v1 := pushImage(t, "fx-app", "v1")
	commit := s.push(map[string]string{"app/deploy.yaml": deployment(1, v1.ref())}, "Initial")
	s.createKustomization("app")
	s.mergePatch(kustomizationsRes, "flux-system", `{spec: {kubeConfig: {secretRef: {name: fx-spoke-kubeconfig}}}}`)
	applyOn(t, dynamic.NewForConfigOrDie(sp.Config()), "fx-spoke", deployment(1, v1.ref()))
	s.fluxApplied(commit)

	_, v := s.waitStatus(rollout, "verified on the spoke", func(_ *status.App, v *verdict.Verification) bool { return v != nil && v.Verified })
	for _, c := range v.Containers {
		if c.Node != "spoke-amd64" || c.RunningDigest != v1.digest {
			t.Errorf("container %+v; want it on the spoke's node, running %s", c, v1.digest)
		}
	}
}

// createKubeConfigSecret writes a kubeconfig for cluster sp, as Flux's
// spec.kubeConfig Secrets hold one, under key of Secret ns/name on the hub.
func createKubeConfigSecret(t *testing.T, sp *kube.Cluster, ns, name, key string) {
	t.Helper()
	cfg := sp.Config()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["spoke"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["spoke"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["spoke"] = &clientcmdapi.Context{Cluster: "spoke", AuthInfo: "spoke"}
	kc.CurrentContext = "spoke"
	raw, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.kube.CoreV1().Secrets(ns).Create(testCtx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Data:       map[string][]byte{key: raw},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestPinbotAppOnSpoke: one of pinbot's own apps with cluster: applies to
// the cluster its kubeconfig Secret (in the state namespace) reaches,
// verifies the Pods there and leaves the hub alone; with the Secret
// missing the sync fails naming it, and the spoke's token never shows.
func TestPinbotAppOnSpoke(t *testing.T) {
	s := newScenario(t, "own-spoke", "{}", "allowNamespaces: [own-spoke]",
		"cluster: {kubeConfig: {secretRef: {name: own-spoke-kubeconfig, key: config}}}")
	sp, _, stop := startSpoke(t, "own-spoke")
	v1 := pushImage(t, "own-spoke-app", "v1")
	s.push(map[string]string{"app/deploy.yaml": deployment(2, v1.ref())}, "Initial")

	_, _, err := s.r.Sync(testCtx, s.name, 0)
	if err == nil || !strings.Contains(err.Error(), "own-spoke-kubeconfig") {
		t.Fatalf("sync without the kubeconfig Secret: %v; want an error naming it", err)
	}

	createKubeConfigSecret(t, sp, s.r.Config().StateNamespace, "own-spoke-kubeconfig", "config")
	st, v, err := s.r.Sync(testCtx, s.name, rollout)
	if err != nil {
		t.Fatalf("sync to the spoke: %s", err)
	}
	if v == nil || !v.Verified || len(v.Containers) != 2 {
		t.Fatalf("after the sync: %s; want 2 Pods verified", describe(st, v))
	}
	for _, c := range v.Containers {
		if c.Node != "spoke-amd64" || c.RunningDigest != v1.digest {
			t.Errorf("container %+v; want it on the spoke's node, running %s", c, v1.digest)
		}
	}
	spokeKube := kubernetes.NewForConfigOrDie(sp.Config())
	if _, err := spokeKube.AppsV1().Deployments("own-spoke").Get(testCtx, "web", metav1.GetOptions{}); err != nil {
		t.Errorf("the Deployment on the spoke: %s", err)
	}
	if _, err := env.kube.AppsV1().Deployments("own-spoke").Get(testCtx, "web", metav1.GetOptions{}); err == nil {
		t.Error("the Deployment was applied to the hub too")
	}

	// Out of sync on the spoke: pinbot diffs the spoke's object.
	if _, err := spokeKube.AppsV1().Deployments("own-spoke").Patch(testCtx, "web", types.MergePatchType,
		[]byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, time.Minute, "the spoke's edit out of sync", func() (bool, string) {
		d, err := s.r.Diff(testCtx, s.name)
		if err != nil {
			return false, err.Error()
		}
		for _, f := range d.Fields {
			if strings.Contains(f.Path, "replicas") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("fields %+v", d.Fields)
	})
	if strings.Contains(st.Error, sp.Config().BearerToken) {
		t.Errorf("the spoke's token shows in the status: %s", st.Error)
	}

	// The other cluster stops answering: the app's error names it, though
	// its watch caches still hold the Pods of a proof already made.
	poll.Until(t, time.Minute, "the three Pods verified", func() (bool, string) {
		st, v, err := s.r.Status(testCtx, s.name)
		return err == nil && v != nil && v.Verified && len(v.Containers) == 3, describe(st, v)
	})
	if _, v, err := s.r.Status(testCtx, s.name); err != nil || !v.Verified {
		t.Fatalf("the proof again: %v, %v", v, err)
	}
	token := sp.Config().BearerToken
	stop()
	var ce *cluster.Error
	poll.Until(t, time.Minute, "the app's error naming its cluster", func() (bool, string) {
		st, _, err = s.r.Status(testCtx, s.name)
		return errors.As(err, &ce), fmt.Sprint(err)
	})
	if !strings.Contains(ce.Error(), "own-spoke-kubeconfig") || st == nil || st.Verified {
		t.Errorf("status %+v, error %v; want unverified, naming the kubeconfig Secret", st, ce)
	}
	if strings.Contains(ce.Error(), token) || strings.Contains(st.Error, token) {
		t.Errorf("the spoke's token shows: %s", ce)
	}
}

// TestHostileKubeConfigSecrets: a kubeConfig Secret is written by whoever
// may write Secrets in the Kustomization's namespace, not by pinbot's
// operator. One whose user runs an exec plugin, and one whose tokenFile is
// pinbot's own ServiceAccount token with the author's server, are refused
// naming the Secret and the field: the command never runs, and the token
// never reaches the author's server.
func TestHostileKubeConfigSecrets(t *testing.T) {
	dir := t.TempDir()
	owned := filepath.Join(dir, "owned")
	ownToken := filepath.Join(dir, "token")
	const pinbotToken = "pinbot-own-serviceaccount-token-0123456789"
	if err := os.WriteFile(ownToken, []byte(pinbotToken), 0o600); err != nil {
		t.Fatal(err)
	}
	var heard atomic.Int64
	author := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.Header.Get("Authorization"), pinbotToken) {
			heard.Add(1)
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(author.Close)

	for _, tc := range []struct {
		name, user, want string
	}{
		{name: "exec", user: fmt.Sprintf(`{exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, "touch %s"], interactiveMode: Never}}`, owned),
			want: "users[author].user.exec: an exec plugin runs \"/bin/sh\" as pinbot; refused unless pinbot runs with --insecure-kubeconfig-exec"},
		{name: "tokenfile", user: fmt.Sprintf(`{tokenFile: %s}`, ownToken),
			want: "users[author].user.tokenFile: it would send a file of pinbot's as the bearer token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newDeployerScenario(t, "fx-hostile-"+tc.name, "flux")
			secret := "hostile-" + tc.name
			kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
current-context: author
contexts: [{name: author, context: {cluster: author, user: author}}]
clusters: [{name: author, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: author, user: %s}]
`, author.URL, tc.user)
			if _, err := env.kube.CoreV1().Secrets("flux-system").Create(testCtx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: "flux-system"},
				Data:       map[string][]byte{"value": []byte(kubeconfig)},
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			v1 := pushImage(t, "fx-hostile-"+tc.name, "v1")
			commit := s.push(map[string]string{"app/deploy.yaml": deployment(1, v1.ref())}, "Initial")
			s.createKustomization("app")
			s.mergePatch(kustomizationsRes, "flux-system", `{spec: {kubeConfig: {secretRef: {name: `+secret+`}}}}`)
			s.fluxApplied(commit)

			// The cluster cannot be read: the status is an error naming
			// the Secret and the field, never a proof.
			var last error
			poll.Until(t, rollout, "the Secret refused", func() (bool, string) {
				st, _, err := s.r.Status(testCtx, s.name)
				if err == nil {
					return false, describe(st, nil)
				}
				last = err
				return strings.Contains(err.Error(), tc.want), err.Error()
			})
			if !strings.Contains(last.Error(), "flux-system/"+secret) {
				t.Errorf("error %q does not name the Secret", last)
			}
			if _, err := os.Stat(owned); err == nil {
				t.Error("the Secret's exec plugin ran as pinbot")
			}
			if n := heard.Load(); n > 0 {
				t.Errorf("pinbot's own token reached the Secret author's server %d times", n)
			}
		})
	}
}
