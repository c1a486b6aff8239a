package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/internal/testenv/stack"
)

// TestServeReloadsItsConfig changes serve's config file under a running
// serve, as the kubelet swaps a mounted ConfigMap: a change with a typo is
// refused, logged with its file:line, and exported, while serve keeps
// running the config it had; a valid change adding an app is applied in
// place, and the new app is synced, with no restart of the process.
func TestServeReloadsItsConfig(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cm := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {k: v}\n", name)
	}
	rig := newServeRig(ctx, t, stack.Options{Namespaces: []string{"pinbot-system", "web"}},
		map[string]string{"app/web.yaml": cm("web"), "api/api.yaml": cm("api")}, "s3cret")
	g := rig.peers.Gitea
	forge := fmt.Sprintf("{url: %q}", g.URL)
	rig.config(forge, "")
	rep := rig.serve("replica-a", "--reload-interval", "500ms")

	// swap replaces the config file whole, as a ConfigMap's update does.
	swap := func(body string) {
		t.Helper()
		tmp := filepath.Join(filepath.Dir(rig.cfg), ".next")
		if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, rig.cfg); err != nil {
			t.Fatal(err)
		}
	}
	metrics := func() string {
		resp, err := http.Get("http://" + rep.addr + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	history := func(app string) bool {
		_, err := rig.peers.Kube.CoreV1().ConfigMaps("pinbot-system").Get(ctx, "pinbot-app-"+app, metav1.GetOptions{})
		return err == nil
	}
	poll.Until(t, 60*time.Second, "app web synced", func() (bool, string) { return history("web"), rep.log.String() })

	good, err := os.ReadFile(rig.cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A typo: reviewer: is no key of an app.
	typo := strings.Replace(string(good), "namespace: web,", "namespace: web, reviewer: alice,", 1)
	if typo == string(good) {
		t.Fatal("the rig's config changed shape; the typo went nowhere")
	}
	swap(typo)
	poll.Until(t, 30*time.Second, "the typo refused and exported", func() (bool, string) {
		m := metrics()
		return strings.Contains(m, "pinbot_config_last_reload_successful 0") &&
			strings.Contains(m, `pinbot_config_reloads_total{result="refused"} 1`), m
	})
	if log := rep.log.String(); !regexp.MustCompile(regexp.QuoteMeta(rig.cfg) + `:\d+: .*unknown field \\"reviewer\\"`).MatchString(log) {
		t.Errorf("the refusal's log does not name %s:LINE and the unknown field:\n%s", rig.cfg, log)
	}
	if rep.cmd.ProcessState != nil {
		t.Fatalf("serve exited on an invalid config: %v", rep.cmd.ProcessState)
	}

	// A valid change: a second app. Applied in place, and synced.
	swap(string(good) + fmt.Sprintf("  - {name: api, repo: %s, branch: main, path: api, namespace: web, allowNamespaces: [web], syncPolicy: {automated: true}}\n",
		g.RepoURL(g.AdminUser, "manifests")))
	poll.Until(t, 60*time.Second, "the new app synced", func() (bool, string) { return history("api"), rep.log.String() })
	poll.Until(t, 30*time.Second, "the reload exported", func() (bool, string) {
		m := metrics()
		return strings.Contains(m, "pinbot_config_last_reload_successful 1") &&
			strings.Contains(m, `pinbot_config_reloads_total{result="applied"} 1`), m
	})
	// The fetches of the two apps went to Gitea, and are counted.
	if m := metrics(); !regexp.MustCompile(`pinbot_git_requests_total\{api="git",result="2xx"\} [1-9]`).MatchString(m) {
		t.Errorf("/metrics counts no successful Git request:\n%s", m)
	}
	select {
	case err := <-rep.done:
		t.Fatalf("serve exited during the reloads: %v", err)
	default:
	}
}
