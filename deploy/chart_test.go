package deploy

import (
	"context"
	"fmt"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/cmd/pinbot/cli"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/render"
	"pinbot.dev/pinbot/serve"
)

// exampleValues is the chart's example install, as the docs show it.
const exampleValues = "ci/example-values.yaml"

// chart renders charts/pinbot as `helm template pinbot charts/pinbot -n
// pinbot-system` does, through the Helm SDK, with the value files given
// (relative to the chart) and a cluster serving the ServiceMonitor API.
func chart(t *testing.T, valueFiles ...string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return render.FS(os.DirFS(".."), "charts/pinbot",
		render.WithHelm(render.Helm{ReleaseName: "pinbot", Namespace: stateNamespace, ValueFiles: valueFiles}),
		render.WithCapabilities(render.Capabilities{KubeVersion: "v1.37.2", APIVersions: []string{"monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor"}}))
}

// chartConfig is serve's config the chart renders into objs, as serve
// parses it.
func chartConfig(t *testing.T, objs []*unstructured.Unstructured) *serve.Config {
	t.Helper()
	var cm corev1.ConfigMap
	find(t, objs, "ConfigMap", "pinbot-config", &cm)
	cfg, err := serve.Parse("reconciler.yaml", []byte(cm.Data["reconciler.yaml"]))
	if err != nil {
		t.Fatalf("the chart's config does not parse: %s", err)
	}
	return cfg
}

// find decodes the object kind/name of objs into out.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string, out any) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, out, true); err != nil {
				t.Fatalf("%s %s: %s", kind, name, err)
			}
			return
		}
	}
	t.Fatalf("the chart renders no %s %s", kind, name)
}

// TestChartRenders: the example values render a config serve accepts, in
// the release's namespace, and a Deployment whose args are serve's; the
// chart's defaults alone fail, naming the value to set.
func TestChartRenders(t *testing.T) {
	if _, err := chart(t); err == nil || !strings.Contains(err.Error(), "set config.inline") {
		t.Errorf("the chart with no config: error %v, want one saying to set config.inline", err)
	}
	objs, err := chart(t, exampleValues)
	if err != nil {
		t.Fatal(err)
	}
	cfg := chartConfig(t, objs)
	if cfg.StateNamespace != stateNamespace {
		t.Errorf("stateNamespace %q, want the release's namespace %q", cfg.StateNamespace, stateNamespace)
	}
	var dep appsv1.Deployment
	find(t, objs, "Deployment", "pinbot", &dep)
	args := dep.Spec.Template.Spec.Containers[0].Args
	root := cli.NewRootCommand()
	cmd, rest, err := root.Find(args)
	if err != nil || cmd.Name() != "serve" {
		t.Fatalf("args %q run no pinbot serve: %v", args, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Errorf("args %q: %s", args, err)
	}
	if img := dep.Spec.Template.Spec.Containers[0].Image; !strings.Contains(img, "@sha256:") {
		t.Errorf("image %q, want the example's digest pin", img)
	}
	env := map[string]string{}
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if !strings.Contains(env["SSL_CERT_DIR"], "/etc/pinbot/ca") {
		t.Errorf("extraCACerts set, but SSL_CERT_DIR is %q", env["SSL_CERT_DIR"])
	}
	if has(objs, "Role", "pinbot-clusters") {
		t.Error("a Role for kubeconfig Secrets with no rbac.clusterSecrets")
	}

	// The kubeconfig Secrets of apps on other clusters, by name only.
	if objs, err = chart(t, exampleValues, "../../deploy/testdata/clusters-values.yaml"); err != nil {
		t.Fatal(err)
	}
	var role rbacv1.Role
	find(t, objs, "Role", "pinbot-clusters", &role)
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"spoke-kubeconfig"}, Verbs: []string{"get"}}}
	if diff := cmp.Diff(want, role.Rules); diff != "" || role.Namespace != stateNamespace {
		t.Errorf("Role pinbot-clusters in %q (-want +got):\n%s", role.Namespace, diff)
	}
	if has(objs, "Role", "pinbot-shards") {
		t.Error("a Role for the shards' Leases with shards: 0")
	}

	// Sharded: the flag, and the Leases it takes, lists and deletes.
	sharded, err := chart(t, exampleValues, "../../deploy/testdata/shards-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var sdep appsv1.Deployment
	find(t, sharded, "Deployment", "pinbot", &sdep)
	sargs := sdep.Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(sargs, "--shards=3") || !slices.Contains(sargs, "--leader-elect") {
		t.Errorf("shards: 3 renders args %q, want --shards=3 with --leader-elect", sargs)
	}
	scmd, srest, err := cli.NewRootCommand().Find(sargs)
	if err == nil {
		err = scmd.ParseFlags(srest)
	}
	if err != nil {
		t.Errorf("args %q: %s", sargs, err)
	}
	var srole rbacv1.Role
	find(t, sharded, "Role", "pinbot-shards", &srole)
	swant := []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}
	if diff := cmp.Diff(swant, srole.Rules); diff != "" || srole.Namespace != stateNamespace {
		t.Errorf("Role pinbot-shards in %q (-want +got):\n%s", srole.Namespace, diff)
	}
	if _, err := chart(t, exampleValues, "../../deploy/testdata/shards-values.yaml", "../../deploy/testdata/single-values.yaml"); err == nil ||
		!strings.Contains(err.Error(), "shards needs leaderElection") {
		t.Errorf("shards without leader election: error %v, want the chart to refuse", err)
	}

	// The Argo CD token, where the config's argocd.tokenFile reads it.
	var withToken appsv1.Deployment
	find(t, objs, "Deployment", "pinbot", &withToken)
	mounted := false
	for _, m := range withToken.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounted = mounted || m.MountPath == "/etc/pinbot/argocd"
	}
	secret := false
	for _, v := range withToken.Spec.Template.Spec.Volumes {
		secret = secret || v.Secret != nil && v.Secret.SecretName == "pinbot-argocd"
	}
	if !mounted || !secret {
		t.Errorf("secrets.argocdToken set: mounted at /etc/pinbot/argocd %t, Secret pinbot-argocd a volume %t; want both", mounted, secret)
	}
}

// TestChartWithoutAWebhookSecret: secrets.webhook "" is a working
// install (a verify-only one next to Argo CD, say): serve runs with
// --no-webhook, which its flags accept, and nothing names a webhook port.
func TestChartWithoutAWebhookSecret(t *testing.T) {
	objs, err := chart(t, "ci/verify-only-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	find(t, objs, "Deployment", "pinbot", &dep)
	c := dep.Spec.Template.Spec.Containers[0]
	cmd, rest, err := cli.NewRootCommand().Find(c.Args)
	if err != nil || cmd.Name() != "serve" {
		t.Fatalf("args %q do not run pinbot serve: %v", c.Args, err)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Fatalf("args %q: %s", c.Args, err)
	}
	flag := func(name string) string { return cmd.Flags().Lookup(name).Value.String() }
	if flag("no-webhook") != "true" || flag("webhook-secret-file") != "" || flag("webhook-listen") != "" {
		t.Errorf("args %q: want --no-webhook, and no webhook secret or port", c.Args)
	}
	var svc corev1.Service
	find(t, objs, "Service", "pinbot", &svc)
	for _, p := range svc.Spec.Ports {
		if p.Name == "webhook" {
			t.Errorf("Service port %+v without a webhook", p)
		}
	}
}

// TestChartGrantsWhatTheBaseGrants holds the chart's RBAC to deploy/base's
// (and the deployers component's), rule for rule, so the two install
// paths cannot drift apart.
func TestChartGrantsWhatTheBaseGrants(t *testing.T) {
	objs, err := chart(t, exampleValues)
	if err != nil {
		t.Fatal(err)
	}
	shipped := resources(t, build(t, "overlays/example"))
	compared := 0
	for _, kind := range []string{"ClusterRole", "Role"} {
		for _, name := range []string{"pinbot-observe", "pinbot-apply", "pinbot-state", "pinbot-leader-election", "pinbot-deployers"} {
			var want, got rbacv1.ClusterRole
			if !has(shipped, kind, name) {
				continue
			}
			find(t, shipped, kind, name, &want)
			find(t, objs, kind, name, &got)
			if !reflect.DeepEqual(got.Rules, want.Rules) {
				t.Errorf("%s %s: the chart grants %+v, deploy/ %+v", kind, name, got.Rules, want.Rules)
			}
			compared++
		}
	}
	if compared != 5 {
		t.Errorf("compared %d roles, want 5", compared)
	}
}

func has(objs []*unstructured.Unstructured, kind, name string) bool {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return true
		}
	}
	return false
}

// TestChartOnControlPlane installs the chart's example on a fresh real
// control plane, with `helm install -n pinbot-system --create-namespace`'s
// namespace and the app namespace existing, and asks the same
// SubjectAccessReviews as of deploy/.
func TestChartOnControlPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster, a := startCluster(ctx, t)
	f, err := kube.CRDFile(kube.ServiceMonitorCRD)
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.InstallCRDs(ctx, f); err != nil {
		t.Fatal(err)
	}
	admin := kubernetes.NewForConfigOrDie(cluster.Config())
	for _, ns := range []string{stateNamespace, "web"} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := chart(t, exampleValues)
	if err != nil {
		t.Fatal(err)
	}
	applyAll(ctx, t, a, objs)
	ask := reviewer(admin)
	waitAllowed(ctx, t, ask, appAccess[0])
	checkAccess(ctx, t, ask)
}

// TestChartHostilePeerBoundaries: the NetworkPolicy gives each port its
// own sources (the dashboard's proxy never admits the forge, nor the
// other way round), serve reads Argo CD's cluster Secrets from the
// namespace the chart grants, and the spoke opt-ins reach serve's flags.
func TestChartHostilePeerBoundaries(t *testing.T) {
	objs, err := chart(t, exampleValues, "../../deploy/testdata/hostile-peers-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var np networkingv1.NetworkPolicy
	find(t, objs, "NetworkPolicy", "pinbot", &np)
	from := map[string]string{}
	for _, rule := range np.Spec.Ingress {
		if len(rule.Ports) != 1 || len(rule.From) != 1 {
			t.Fatalf("rule %+v: want one port and its own sources", rule)
		}
		from[rule.Ports[0].Port.String()] = fmt.Sprint(rule.From[0])
	}
	if !strings.Contains(from["http"], "oauth2-proxy") || !strings.Contains(from["webhook"], "gitea") || len(from) != 2 {
		t.Errorf("sources by port %v: want http from the proxy, webhook from the forge", from)
	}
	var dep appsv1.Deployment
	find(t, objs, "Deployment", "pinbot", &dep)
	args := dep.Spec.Template.Spec.Containers[0].Args
	for _, want := range []string{"--argocd-cluster-namespaces=gitops", "--argocd-exec-allow=argocd-k8s-auth,kubelogin", "--insecure-kubeconfig-exec"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %q, want %s", args, want)
		}
	}
	if slices.Contains(args, "--insecure-kubeconfig-files") {
		t.Errorf("args %q allow kubeconfig files, which the values do not", args)
	}
	var role rbacv1.Role
	find(t, objs, "Role", "pinbot-argocd-clusters", &role)
	if role.Namespace != "gitops" {
		t.Errorf("the cluster Secrets' grant is in %q, want gitops where serve reads them", role.Namespace)
	}
	cmd, rest, err := cli.NewRootCommand().Find(args)
	if err == nil {
		err = cmd.ParseFlags(rest)
	}
	if err != nil {
		t.Errorf("args %q: %s", args, err)
	}
}

// TestChartServesTheGate: secrets.gateToken mounts the token and turns
// serve's gate endpoint on, and NOTES shows CI's promote line with it.
func TestChartServesTheGate(t *testing.T) {
	objs, err := chart(t, exampleValues, "../../deploy/testdata/gate-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var dep appsv1.Deployment
	find(t, objs, "Deployment", "pinbot", &dep)
	c := dep.Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--gate-token-file=/etc/pinbot/gate/token") {
		t.Errorf("args %q, want the gate token file", c.Args)
	}
	mounted := slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/etc/pinbot/gate" })
	secret := slices.ContainsFunc(dep.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Secret != nil && v.Secret.SecretName == "pinbot-gate"
	})
	if !mounted || !secret {
		t.Errorf("gate token mounted %t, Secret pinbot-gate a volume %t; want both", mounted, secret)
	}
	cmd, rest, err := cli.NewRootCommand().Find(c.Args)
	if err == nil {
		err = cmd.ParseFlags(rest)
	}
	if err != nil {
		t.Errorf("args %q: %s", c.Args, err)
	}

	// ingress.gate routes the gate, and only it besides the webhook, to
	// port http, for CI outside the cluster; never without its token.
	objs, err = chart(t, exampleValues, "../../deploy/testdata/gate-values.yaml", "../../deploy/testdata/gate-ingress-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ing networkingv1.Ingress
	find(t, objs, "Ingress", "pinbot", &ing)
	routes := map[string]string{}
	for _, p := range ing.Spec.Rules[0].HTTP.Paths {
		routes[p.Path] = p.Backend.Service.Port.Name
	}
	if want := map[string]string{"/webhook/gitea": "webhook", "/api/v1/gate": "http"}; !maps.Equal(routes, want) {
		t.Errorf("the Ingress routes %v, want %v", routes, want)
	}
	if _, err := chart(t, exampleValues, "../../deploy/testdata/gate-ingress-values.yaml"); err == nil || !strings.Contains(err.Error(), "ingress.gate needs secrets.gateToken") {
		t.Errorf("ingress.gate without secrets.gateToken: %v, want the chart to refuse", err)
	}
}
