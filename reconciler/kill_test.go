package reconciler_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler/object"
)

var (
	pinbotOnce sync.Once
	pinbotPath string
	pinbotErr  error
)

// pinbotBinary builds pinbot once per test binary.
func pinbotBinary(t *testing.T) string {
	t.Helper()
	pinbotOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pinbot-sync-kill-")
		if err != nil {
			pinbotErr = err
			return
		}
		pinbotPath = filepath.Join(dir, "pinbot")
		if out, err := exec.Command("go", "build", "-o", pinbotPath, "pinbot.dev/pinbot/cmd/pinbot").CombinedOutput(); err != nil {
			pinbotErr = fmt.Errorf("building pinbot: %w\n%s", err, out)
		}
	})
	if pinbotErr != nil {
		t.Fatal(pinbotErr)
	}
	return pinbotPath
}

// TestKillDuringSync kills `pinbot sync --prune` with SIGKILL while it
// applies a commit that drops one ConfigMap and adds many, then syncs
// again: the inventory ends exactly as Git declares it; nothing Git
// declares was pruned, and the dropped object is gone.
func TestKillDuringSync(t *testing.T) {
	const n = 150
	s := newScenario(t, "kill-sync", "{automated: false}")
	s.push(map[string]string{"app/old.yaml": cm("old"), "app/keep.yaml": cm("keep")}, "v1")
	if _, _, err := s.r.Sync(testCtx, s.name, 0); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"app/keep.yaml": cm("keep")}
	want := []string{"ConfigMap/keep"}
	for i := range n {
		name := fmt.Sprintf("new-%03d", i)
		files["app/"+name+".yaml"] = cm(name)
		want = append(want, "ConfigMap/"+name)
	}
	slices.Sort(want)
	s.push(files, "v2")

	bin := pinbotBinary(t)
	args := []string{"sync", s.name, "--prune", "--wait", "0", "--config", s.cfg, "--kubeconfig", env.cluster.Kubeconfig, "--cache-dir", t.TempDir()}
	cmd := exec.Command(bin, args...)
	var errOut strings.Builder
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it as soon as the first new object is live: the sync is then
	// midway through its applies.
	sel := metav1.ListOptions{LabelSelector: object.LabelApp + "=" + s.name}
	applied := 0
	poll.Until(t, 3*time.Minute, "the sync starts applying", func() (bool, string) {
		cms, err := env.kube.CoreV1().ConfigMaps(s.name).List(testCtx, sel)
		if err != nil {
			return false, err.Error()
		}
		applied = 0
		for _, c := range cms.Items {
			if strings.HasPrefix(c.Name, "new-") {
				applied++
			}
		}
		return applied > 0, fmt.Sprintf("%d objects", len(cms.Items))
	})
	cmd.Process.Kill()
	cmd.Wait()
	if applied >= n {
		t.Fatalf("the kill came after every object was applied: the test did not stop pinbot midway")
	}
	t.Logf("killed with %d of %d new objects applied", applied, n)

	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("pinbot sync after the kill: %s\n%s", err, out)
	}
	got := s.inventory()
	slices.Sort(got)
	if !slices.Equal(want, got) {
		t.Errorf("inventory after the rerun: %d objects, want %d; missing %v, extra %v", len(got), len(want), minus(want, got), minus(got, want))
	}
}

func cm(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  k: v\n"
}

// minus is a without the elements of b.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
