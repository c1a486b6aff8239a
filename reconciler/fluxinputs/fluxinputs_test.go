package fluxinputs

import (
	"context"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/reconciler/deployer"
)

// TestInputsAsFluxComposesThem: on a real API server, a HelmRelease's
// values are its valuesFrom in order (a ConfigMap, a Secret's key set at
// a targetPath, an optional one that is missing), then spec.values over
// them; a Kustomization's variables are its substituteFrom's data, then
// substitute's. A required source that is missing is an error naming it.
func TestInputsAsFluxComposesThem(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
	ctx := context.Background()
	c, err := kube.Start(ctx, kube.Options{})
	if err != nil {
		t.Fatalf("starting the control plane: %s", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	client, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "flux-system"
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-values"},
		Data: map[string]string{"values.yaml": "image: {repository: r.example/web, tag: v1}\nreplicas: 2\n", "region": "eu"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-digest"},
		Data: map[string][]byte{"digest": []byte("sha256:aa"), "region": []byte("us")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	h := &deployer.Helm{ValuesNamespace: ns, Values: map[string]any{"replicas": 3}, ValuesFrom: []deployer.ValuesRef{
		{Kind: "ConfigMap", Name: "web-values"},
		{Kind: "Secret", Name: "web-digest", ValuesKey: "digest", TargetPath: "image.digest"},
		{Kind: "ConfigMap", Name: "absent", Optional: true},
	}}
	got, err := HelmValues(ctx, client, h)
	want := map[string]any{"image": map[string]any{"repository": "r.example/web", "tag": "v1", "digest": "sha256:aa"}, "replicas": 3}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("HelmValues = %v, %v; want %v", got, err, want)
	}
	h.ValuesFrom[2].Optional = false
	if _, err := HelmValues(ctx, client, h); err == nil || !strings.Contains(err.Error(), "spec.valuesFrom[2]: reading ConfigMap flux-system/absent") {
		t.Errorf("a required values source missing: %v", err)
	}

	sub := &deployer.Substitute{Namespace: ns, Vars: map[string]string{"tier": "web"}, From: []deployer.VarsFrom{
		{Kind: "ConfigMap", Name: "web-values"}, {Kind: "Secret", Name: "web-digest"}, {Kind: "Secret", Name: "absent", Optional: true}}}
	vars, err := Vars(ctx, client, sub)
	if err != nil || vars["region"] != "us" || vars["tier"] != "web" || vars["digest"] != "sha256:aa" {
		t.Errorf("Vars = %v, %v; want the Secret's region over the ConfigMap's, and substitute's tier", vars, err)
	}
}
