package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"pinbot.dev/pinbot/internal/testenv/stack"
)

func TestDiffUsage(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "pinbot.yaml")
	if err := os.WriteFile(cfg, []byte("apps:\n  - {name: web, repo: 'http://127.0.0.1:1/o/r.git', namespace: web}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"diff"}, exitUsage, "accepts 1 arg"},
		{[]string{"diff", "web", "--kubeconfig", filepath.Join(t.TempDir(), "none")}, exitUsage, "no config file given, and no cluster to read pinbot serve's from"},
		{[]string{"diff", "api", "--config", cfg}, exitUsage, `no app "api" (apps: web)`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.stderr)
			}
		})
	}
}

// TestDiffCommand runs pinbot diff against a real control plane and Gitea:
// exit 0 in sync, exit 1 with the drifted field once the cluster changes.
func TestDiffCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs bin/ peers (make tools)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := stack.Start(ctx, stack.Options{Namespaces: []string{"pinbot-system", "shop"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Stop)
	g, c, client := st.Gitea, st.Cluster, st.Kube
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "settings.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: fast}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	commit, err := g.CreateRepoFromDir(ctx, g.AdminUser, "shop", "main", src)
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "pinbot.yaml")
	config := fmt.Sprintf("apps:\n  - {name: shop, repo: %s, namespace: shop}\n", g.RepoURL(g.AdminUser, "shop"))
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	pinbot := func(args ...string) (int, string, string) {
		return run(t, append(args, "--config", cfg, "--kubeconfig", c.Kubeconfig, "--cache-dir", t.TempDir())...)
	}

	code, out, _ := pinbot("diff", "shop")
	if code != exitError || !strings.Contains(out, "ConfigMap shop/settings: missing") {
		t.Errorf("diff before any sync: exit %d\n%s", code, out)
	}
	if code, out, stderr := pinbot("sync", "shop", "--wait", "0"); code != exitOK {
		t.Fatalf("sync: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := pinbot("diff", "shop"); code != exitOK || out != "shop at "+commit[:12]+": Synced: in sync\n" {
		t.Errorf("diff after the sync: exit %d\n%s%s", code, out, stderr)
	}

	patch := []byte(`{"data":{"mode":"slow"},"metadata":{"labels":{"owner":"bob"}}}`)
	if _, err := client.CoreV1().ConfigMaps("shop").Patch(ctx, "settings", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := pinbot("diff", "shop")
	want := "shop at " + commit[:12] + ": OutOfSync: 1 field out of sync, 0 missing, 0 orphaned\nConfigMap shop/settings: data.mode git=fast live=slow\n"
	if code != exitError || out != want || !strings.Contains(stderr, "shop differs from Git at "+commit[:12]) {
		t.Errorf("diff after an edit: exit %d\n%s%s\nwant exit 1 and\n%s", code, out, stderr, want)
	}
	code, out, _ = pinbot("diff", "shop", "-o", "json")
	var d struct {
		Sync   string `json:"sync"`
		Fields []struct {
			Object    struct{ Kind, Namespace, Name string }
			Path      string `json:"path"`
			Git, Live any
		} `json:"fields"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || code != exitError || d.Sync != "OutOfSync" || len(d.Fields) != 1 ||
		d.Fields[0].Path != "data.mode" || d.Fields[0].Git != "fast" || d.Fields[0].Live != "slow" || d.Fields[0].Object.Name != "settings" {
		t.Errorf("diff -o json: exit %d, %v\n%s", code, err, out)
	}
}
