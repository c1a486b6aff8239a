package spoke

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// kubeconfig returns a kubeconfig whose one user and cluster carry the
// given YAML fields.
func kubeconfig(user, cluster string) []byte {
	return []byte(`apiVersion: v1
kind: Config
current-context: spoke
contexts:
- name: spoke
  context: {cluster: spoke, user: spoke}
clusters:
- name: spoke
  cluster:
    server: https://spoke.example:6443
` + cluster + `
users:
- name: spoke
  user:
` + user + `
`)
}

func TestFromKubeConfig(t *testing.T) {
	ownToken := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(ownToken, []byte("own-token-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	const (
		exec      = "    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, 'touch /tmp/owned'], interactiveMode: Never}"
		tokenFile = "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token"
		certFiles = "    client-certificate: /etc/pinbot/tls.crt\n    client-key: /etc/pinbot/tls.key"
		caFile    = "    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
		provider  = "    auth-provider: {name: oidc, config: {idp-issuer-url: https://idp.example, client-id: x}}"
		token     = "    token: tok-from-the-secret-0123"
	)
	for _, tc := range []struct {
		name          string
		user, cluster string
		trust         Trust
		wantErr       []string // each must appear; none means it is accepted
	}{
		{name: "a token is data", user: token},
		{name: "an exec plugin", user: exec,
			wantErr: []string{`users[spoke].user.exec: an exec plugin runs "/bin/sh" as pinbot; refused unless pinbot runs with --insecure-kubeconfig-exec`}},
		{name: "an exec plugin, allowed", user: exec, trust: Trust{KubeConfigExec: true}},
		{name: "pinbot's own token file", user: tokenFile,
			wantErr: []string{"users[spoke].user.tokenFile: it would send a file of pinbot's as the bearer token; refused unless pinbot runs with --insecure-kubeconfig-files"}},
		{name: "a token file, allowed", user: "    tokenFile: " + ownToken, trust: Trust{KubeConfigFiles: true}},
		{name: "client certificate and key files", user: certFiles,
			wantErr: []string{"users[spoke].user.client-certificate: a file path", "users[spoke].user.client-key: a file path"}},
		{name: "a CA file", user: token, cluster: caFile,
			wantErr: []string{"clusters[spoke].cluster.certificate-authority: a file path"}},
		{name: "an auth provider", user: provider,
			wantErr: []string{`users[spoke].user.auth-provider: the auth provider "oidc" runs inside pinbot`}},
		{name: "exec allowed does not allow files", user: exec + "\n" + tokenFile, trust: Trust{KubeConfigExec: true},
			wantErr: []string{"users[spoke].user.tokenFile"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := FromKubeConfig("kubeConfig ns/spoke", kubeconfig(tc.user, tc.cluster), tc.trust)
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("FromKubeConfig: %s", err)
				}
				if c.Server != "https://spoke.example:6443" {
					t.Errorf("server %q", c.Server)
				}
				return
			}
			var refused *RefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("FromKubeConfig = %v, want a *RefusedError", err)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q, want it to say %q", err, want)
				}
			}
		})
	}
}

// TestKubeConfigOtherContexts checks that only the current context counts:
// a plugin in a context no client is made from is not refused.
func TestKubeConfigOtherContexts(t *testing.T) {
	data := []byte(`apiVersion: v1
kind: Config
current-context: spoke
contexts:
- {name: spoke, context: {cluster: spoke, user: spoke}}
- {name: other, context: {cluster: spoke, user: other}}
clusters:
- {name: spoke, cluster: {server: "https://spoke.example:6443"}}
users:
- {name: spoke, user: {token: t-0123456789}}
- {name: other, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh}}}
`)
	if _, err := FromKubeConfig("x", data, Trust{}); err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), "current-context: spoke", "current-context: nowhere", 1))
	if _, err := FromKubeConfig("x", data, Trust{}); err == nil || !strings.Contains(err.Error(), `current-context "nowhere" names no context`) {
		t.Errorf("FromKubeConfig = %v, want the missing context named", err)
	}
}

func TestSecretNamespaces(t *testing.T) {
	tr := DefaultTrust()
	if got := strings.Join(tr.SecretNamespaces("team-a"), ","); got != "argocd" {
		t.Errorf("default: %s, want argocd only", got)
	}
	tr.ArgoCDAppNamespace = true
	if got := strings.Join(tr.SecretNamespaces("team-a"), ","); got != "argocd,team-a" {
		t.Errorf("with the app's namespace: %s", got)
	}
	if got := strings.Join(tr.SecretNamespaces("argocd"), ","); got != "argocd" {
		t.Errorf("the app in argocd: %s", got)
	}
}
