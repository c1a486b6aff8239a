package kube

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
)

// Shared is one real control plane that a test package's tests share,
// each in a namespace of its own. It starts at the first need
// (Namespace); Main stops it when the tests end:
//
//	var plane kube.Shared
//
//	func TestMain(m *testing.M) { plane.Main(m) }
type Shared struct {
	// Options start the control plane (its Users, say).
	Options Options

	once   sync.Once
	plane  *Cluster
	client kubernetes.Interface
	err    error
	n      atomic.Int64
}

// Main runs the package's tests, stops the control plane if one started,
// and exits with the tests' code. Call it from TestMain.
func (s *Shared) Main(m *testing.M) {
	code := m.Run()
	if s.plane != nil {
		_ = s.plane.Stop()
	}
	os.Exit(code)
}

// Namespace is the control plane, the admin's client of it and a new
// namespace in it for t, named after t. Under testing.Short it skips t.
func (s *Shared) Namespace(t testing.TB) (*Cluster, kubernetes.Interface, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
	s.once.Do(func() {
		if s.plane, s.err = Start(context.Background(), s.Options); s.err == nil {
			s.client, s.err = kubernetes.NewForConfig(s.plane.Config())
		}
	})
	if s.err != nil {
		t.Fatalf("starting the control plane: %s", s.err)
	}
	ns := fmt.Sprintf("t%d-%s", s.n.Add(1), strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())))
	if len(ns) > 63 {
		ns = strings.TrimRight(ns[:63], "-")
	}
	if _, err := s.client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return s.plane, s.client, ns
}
