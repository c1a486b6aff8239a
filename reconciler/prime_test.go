package reconciler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployer"
)

// TestShardsPrimeTheirSpokesNamespaces: a sharded replica taking its
// apps starts the Pod caches of the namespaces they deploy to on the
// spokes their destinations name, before any pass reaches the spoke.
// Here no pass can: the app's Application does not exist yet.
func TestShardsPrimeTheirSpokesNamespaces(t *testing.T) {
	sp, _, _ := startSpoke(t, "prime-ns")
	spokeCfg := sp.Config()
	conf, _ := json.Marshal(map[string]any{"bearerToken": spokeCfg.BearerToken, "tlsClientConfig": map[string]any{"caData": spokeCfg.CAData}})
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-prime", Namespace: "argocd", Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
		StringData: map[string]string{"name": "prime", "server": spokeCfg.Host, "config": string(conf)},
	}
	for _, ns := range []string{"argocd", "prime-ns"} {
		_, _ = env.kube.CoreV1().Namespaces().Create(testCtx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	}
	if _, err := env.kube.CoreV1().Secrets("argocd").Create(testCtx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.kube.CoreV1().Secrets("argocd").Delete(context.Background(), "cluster-prime", metav1.DeleteOptions{})
	})

	file := filepath.Join(t.TempDir(), "pinbot.yaml")
	if err := os.WriteFile(file, []byte("discover:\n  - argocd: {selector: pinbot.test/prime=yes}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := base.WithDiscovered([]config.App{
		{Name: "prime-app", ArgoCD: &deployer.ArgoCDApp{Application: "prime-app-not-yet", Namespace: "argocd"}, Destination: "prime/prime-ns"},
		{Name: "prime-hub", ArgoCD: &deployer.ArgoCDApp{Application: "prime-hub-not-yet", Namespace: "argocd"}, Destination: "/prime-ns"},
	})
	r, err := reconciler.New(cfg, env.cluster.Config(), reconciler.WithReplica("prime-r1"), reconciler.WithRegistry(env.reg), reconciler.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	reg := prometheus.NewRegistry()
	if err := r.Register(reg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.RunSome(ctx, ctx.Done(), func(*config.App) bool { return true }); err != nil && ctx.Err() == nil {
			t.Errorf("RunSome: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })

	poll.Until(t, 30*time.Second, "prime-ns cached on the hub and on the spoke", func() (bool, string) {
		held := cached(t, reg)
		return held["in-cluster/prime-ns"] && held["prime/prime-ns"], fmt.Sprint(held)
	})
}

// cached is what pinbot_cache_namespace says the caches hold, as
// CLUSTER/NAMESPACE.
func cached(t *testing.T, reg *prometheus.Registry) map[string]bool {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range families {
		if f.GetName() != "pinbot_cache_namespace" {
			continue
		}
		for _, m := range f.GetMetric() {
			var cluster, ns string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "cluster":
					cluster = l.GetValue()
				case "namespace":
					ns = l.GetValue()
				}
			}
			out[strings.Join([]string{cluster, ns}, "/")] = true
		}
	}
	return out
}
