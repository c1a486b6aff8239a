package reconciler_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/record"
)

// A sync against a cluster without the state namespace stops before
// anything is applied, and says how to create it; nothing is half-done.
func TestSyncWithoutStateNamespaceAppliesNothing(t *testing.T) {
	s := newScenario(t, "nostate", "{}")
	img := pushImage(t, "nostate-app", "v1")
	s.push(map[string]string{"app/deploy.yaml": deployment(1, img.repo+":v1@"+img.digest)}, "Initial")

	b, err := os.ReadFile(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.cfg, append([]byte("stateNamespace: nostate-missing\n"), b...), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reconciler.New(cfg, env.cluster.Config(), reconciler.WithRegistry(env.reg), reconciler.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	_, _, err = r.Sync(testCtx, s.name, 0)
	if !errors.Is(err, record.ErrNoStateNamespace) {
		t.Fatalf("sync: got error %v, want ErrNoStateNamespace", err)
	}
	for _, want := range []string{`"nostate-missing"`, "kubectl create namespace nostate-missing", "kubectl apply -k deploy/overlays/example"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("sync error %q does not say %q", err, want)
		}
	}
	deps, err := env.kube.AppsV1().Deployments(s.name).List(testCtx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) != 0 {
		t.Errorf("sync applied %d Deployments before failing on the state namespace, want none", len(deps.Items))
	}
}
