package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	sigsyaml "sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/internal/testenv/stack"
)

// TestServeDiscoversApplications runs serve on a config that lists no
// app and selects Argo CD Applications by label: the three labelled ones
// become verify-only apps, the unlabelled one does not; a fourth created
// later is picked up, and a deleted one goes, in place: only their loops
// start and stop.
func TestServeDiscoversApplications(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rig := newServeRig(ctx, t, stack.Options{Namespaces: []string{"pinbot-system", "argocd", "shop"}},
		map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {k: v}\n"}, "s3cret")
	crd, err := kube.CRDFile(kube.ApplicationCRD)
	if err != nil {
		t.Fatal(err)
	}
	if err := rig.peers.Cluster.InstallCRDs(ctx, crd); err != nil {
		t.Fatal(err)
	}
	g := rig.peers.Gitea
	apps := dynamic.NewForConfigOrDie(rig.peers.Cluster.Config()).
		Resource(schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}).Namespace("argocd")
	create := func(name string, labelled bool) {
		t.Helper()
		labels := ""
		if labelled {
			labels = "labels: {pinbot: verify}, "
		}
		y := fmt.Sprintf(`apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: %s, %snamespace: argocd}
spec:
  project: default
  source: {repoURL: %q, path: app, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: shop}
`, name, labels, g.RepoURL(g.AdminUser, "manifests"))
		u := &unstructured.Unstructured{}
		if err := sigsyaml.Unmarshal([]byte(y), &u.Object); err != nil {
			t.Fatal(err)
		}
		if _, err := apps.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating Application %s: %s", name, err)
		}
	}
	for _, n := range []string{"alpha", "beta", "gamma"} {
		create(n, true)
	}
	create("other", false)
	rig.cfg = rig.write("pinbot.yaml", fmt.Sprintf("interval: 10m\nforge: {url: %q}\ndiscover:\n  - argocd: {selector: pinbot=verify}\n", g.URL))
	rep := rig.serve("replica-a", "--reload-interval", "500ms")

	appsOnMetrics := func() []string {
		resp, err := http.Get("http://" + rep.addr + "/metrics")
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out []string
		for _, m := range regexp.MustCompile(`pinbot_app_verification\{app="([^"]+)",state="Pending"\}`).FindAllStringSubmatch(string(b), -1) {
			out = append(out, m[1])
		}
		return out
	}
	want := func(what string, names ...string) {
		t.Helper()
		poll.Until(t, 60*time.Second, what, func() (bool, string) {
			got := appsOnMetrics()
			return strings.Join(got, ",") == strings.Join(names, ","), fmt.Sprintf("apps on /metrics: %v\n%s", got, rep.log.String())
		})
	}
	want("the three labelled Applications discovered", "alpha", "beta", "gamma")

	create("delta", true)
	want("a fourth Application picked up", "alpha", "beta", "delta", "gamma")
	if err := apps.Delete(ctx, "beta", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// In place: only delta's and beta's loops started and stopped; the
	// others ran on, and serve never restarted its turn. Beta's loop
	// stops at the reload's next look; before it, its pass may fail on
	// the deleted Application, which drops beta from /metrics too, so
	// the log, not the metrics, says the loop stopped.
	for _, line := range []string{`started=[delta] stopped=[]`, `started=[] stopped=[beta]`, `"the app is gone from the config; its loop stops" app=beta`} {
		poll.Until(t, 60*time.Second, "serve's log has "+line, func() (bool, string) {
			log := rep.log.String()
			return strings.Contains(log, line), log
		})
	}
	want("a deleted Application gone", "alpha", "delta", "gamma")
	if log := rep.log.String(); strings.Contains(log, "restarts its loops") {
		t.Errorf("serve restarted every loop on a discovery change:\n%s", log)
	}
	select {
	case err := <-rep.done:
		t.Fatalf("serve exited: %v", err)
	default:
	}
}
