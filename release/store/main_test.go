package store

import (
	"testing"

	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/internal/testenv/kube"
)

// shared is one real control plane for the tests that need an API server
// and nothing of their own (no users, no RBAC): each works in a namespace
// of its own.
var shared kube.Shared

func TestMain(m *testing.M) { shared.Main(m) }

// apiServer is the shared control plane's client and a new namespace in
// it for t.
func apiServer(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	_, client, ns := shared.Namespace(t)
	return client, ns
}
