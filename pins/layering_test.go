package pins

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering keeps pins a pure core: no git, no Kubernetes, no network
// client, and none of the packages that are built on it.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "pinbot.dev/pinbot/pins").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{
		"github.com/go-git/", "code.gitea.io/", "k8s.io/", "sigs.k8s.io/", "net/http",
		"pinbot.dev/pinbot/registry", "pinbot.dev/pinbot/gitforge", "pinbot.dev/pinbot/promote",
		"pinbot.dev/pinbot/reconciler", "pinbot.dev/pinbot/cmd",
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %d packages: %q", len(deps), out)
	}
	for _, dep := range deps {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("pins depends on %s", dep)
			}
		}
	}
}
