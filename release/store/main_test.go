package store

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/internal/testenv/kube"
)

// shared is one real control plane for the tests that need an API server
// and nothing of their own (no users, no RBAC): each works in a namespace
// of its own. It starts at the first need; TestMain stops it.
var shared struct {
	once   sync.Once
	plane  *kube.Cluster
	client kubernetes.Interface
	err    error
	n      atomic.Int64
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.plane != nil {
		_ = shared.plane.Stop()
	}
	os.Exit(code)
}

// apiServer is the shared control plane's client and a new namespace in
// it for t.
func apiServer(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
	shared.once.Do(func() {
		if shared.plane, shared.err = kube.Start(context.Background(), kube.Options{}); shared.err == nil {
			shared.client, shared.err = kubernetes.NewForConfig(shared.plane.Config())
		}
	})
	if shared.err != nil {
		t.Fatalf("starting the control plane: %s", shared.err)
	}
	ns := fmt.Sprintf("t%d-%s", shared.n.Add(1), strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())))
	if len(ns) > 63 {
		ns = strings.TrimRight(ns[:63], "-")
	}
	if _, err := shared.client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return shared.client, ns
}
