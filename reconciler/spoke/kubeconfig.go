package spoke

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"

	"pinbot.dev/pinbot/internal/redact"
)

// FromKubeConfig reads a kubeconfig, as a Flux Kustomization's
// spec.kubeConfig Secret holds it, with its current context. Its secrets
// are registered with package redact. An exec plugin runs when the
// client first authenticates; a binary missing from PATH fails then,
// naming it.
func FromKubeConfig(name string, data []byte) (Cluster, error) {
	rc, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return Cluster{}, fmt.Errorf("not a kubeconfig: %w", err)
	}
	for _, s := range []string{rc.BearerToken, rc.Password, string(rc.KeyData)} {
		if s != "" {
			redact.Register(s)
		}
	}
	return Cluster{Name: name, Server: rc.Host, Config: rc}, nil
}
