package serve

import (
	"os"
	"path/filepath"
	"testing"

	"pinbot.dev/pinbot/reconciler"
)

// The cluster is found as kubectl finds it: ~/.kube/config when neither
// --kubeconfig nor $KUBECONFIG is set, and --context over its
// current-context; its clients have pinbot's rate limit.
func TestSourceFindsTheClusterAsKubectlDoes(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	kc := `apiVersion: v1
kind: Config
current-context: a
clusters:
  - {name: a, cluster: {server: "https://127.0.0.1:6443"}}
  - {name: b, cluster: {server: "https://127.0.0.2:6443"}}
users:
  - {name: u, user: {token: t}}
contexts:
  - {name: a, context: {cluster: a, user: u}}
  - {name: b, context: {cluster: b, user: u}}
`
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".kube", "config"), []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ context, host string }{{"", "https://127.0.0.1:6443"}, {"b", "https://127.0.0.2:6443"}} {
		rc, err := Source{Context: tc.context}.RestConfig()
		if err != nil || rc.Host != tc.host {
			t.Errorf("--context %q: host %v, %v; want %s", tc.context, rc, err, tc.host)
			continue
		}
		// Not client-go's 5 a second, which held a leader's requests
		// for tens of seconds at 10,000 apps.
		if rc.QPS != reconciler.QPS || rc.Burst != reconciler.Burst {
			t.Errorf("--context %q: QPS %v, burst %d; want pinbot's %v, %d", tc.context, rc.QPS, rc.Burst, float32(reconciler.QPS), reconciler.Burst)
		}
	}
}
