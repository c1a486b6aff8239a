package proofs

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// placed is a Source whose apps run on the clusters on names.
type placed struct {
	cfg *config.Config
	on  map[string]string
	dyn map[string]dynamic.Interface
}

func (s *placed) Last(string) (*status.App, *verdict.Verification, error) {
	return &status.App{Proof: verdict.Verified}, &verdict.Verification{Verified: true,
		Containers: []verdict.ContainerVerdict{{Container: "app", Pod: "web-1", GitDigest: "sha256:aa", RunningDigest: "sha256:aa", Verdict: verdict.Verified, Ready: true}}}, nil
}
func (s *placed) Config() *config.Config { return s.cfg }
func (s *placed) RunsOn(app string) (string, dynamic.Interface, bool) {
	name, ok := s.on[app]
	return name, s.dyn[name], ok
}

// TestProofsGoWhereThePodsRun: an app whose Pods run on a spoke has its
// Proof there, where the spoke's deployer reads its health, and none on
// pinbot's own cluster; a cluster without the CRD is asked once and
// stops only its own apps' Proofs; an app no pass has placed yet gets
// none.
func TestProofsGoWhereThePodsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
	ctx := context.Background()
	var dyn []dynamic.Interface
	for range 2 {
		c, err := kube.Start(ctx, kube.Options{})
		if err != nil {
			t.Fatalf("starting a control plane: %s", err)
		}
		t.Cleanup(func() { _ = c.Stop() })
		d, err := dynamic.NewForConfig(c.Config())
		if err != nil {
			t.Fatal(err)
		}
		ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "web"}}}
		if _, err := d.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if len(dyn) == 1 { // the spoke has the CRD; pinbot's own cluster has none
			if err := c.InstallCRDs(ctx, filepath.Join("..", "..", "charts", "pinbot", "crds", "proofs.pinbot.dev.yaml")); err != nil {
				t.Fatal(err)
			}
		}
		dyn = append(dyn, d)
	}
	own, spoke := dyn[0], dyn[1]
	src := &placed{
		cfg: &config.Config{Apps: []config.App{{Name: "web", Namespace: "web"}, {Name: "api", Namespace: "web"}, {Name: "new", Namespace: "web"}}},
		on:  map[string]string{"web": "east", "api": ""},
		dyn: map[string]dynamic.Interface{"east": spoke},
	}
	p := New(own, src)
	if err := p.Write(ctx, "web"); err != nil {
		t.Fatalf("writing the spoke's app's Proof: %s", err)
	}
	if _, err := spoke.Resource(GVR).Namespace("web").Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Errorf("the spoke's app's Proof on the spoke: %v", err)
	}
	var none *NoCRDError
	if err := p.Write(ctx, "api"); !errors.As(err, &none) || none.Cluster != "" {
		t.Errorf("writing on pinbot's own cluster, which has no CRD: %v; want NoCRDError of it", err)
	}
	if err := p.Write(ctx, "api"); err != nil {
		t.Errorf("writing there again: %v; want nothing tried", err)
	}
	if err := p.Write(ctx, "new"); err != nil {
		t.Errorf("an app no pass placed: %v; want nothing written", err)
	}
	list, err := spoke.Resource(GVR).Namespace("web").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Errorf("the spoke has %d Proofs; want web's alone", len(list.Items))
	}
}
