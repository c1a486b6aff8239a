package spoke

import (
	"errors"
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"pinbot.dev/pinbot/internal/redact"
)

// FromKubeConfig reads a kubeconfig, as a Flux Kustomization's
// spec.kubeConfig Secret holds it, with its current context. Its secrets
// are registered with package redact. What the kubeconfig may carry
// besides data is what t allows: by default no exec or auth-provider
// plugin and no file path, each refused with a *RefusedError naming the
// field.
func FromKubeConfig(name string, data []byte, t Trust) (Cluster, error) {
	kc, err := clientcmd.Load(data)
	if err != nil {
		return Cluster{}, fmt.Errorf("not a kubeconfig: %w", err)
	}
	if err := checkKubeConfig(kc, t); err != nil {
		return Cluster{}, err
	}
	rc, err := clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{}).ClientConfig()
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

// checkKubeConfig refuses what t does not allow in the current context's
// user and cluster, the only ones a client is made from.
func checkKubeConfig(kc *clientcmdapi.Config, t Trust) error {
	ctx, ok := kc.Contexts[kc.CurrentContext]
	if !ok {
		return fmt.Errorf("not a kubeconfig: current-context %q names no context", kc.CurrentContext)
	}
	var errs []error
	refuse := func(field, why, flag string) { errs = append(errs, &RefusedError{Field: field, Why: why, Flag: flag}) }
	const files = "--insecure-kubeconfig-files"
	if u := kc.AuthInfos[ctx.AuthInfo]; u != nil {
		at := fmt.Sprintf("users[%s].user.", ctx.AuthInfo)
		if u.Exec != nil && !t.KubeConfigExec {
			refuse(at+"exec", fmt.Sprintf("an exec plugin runs %q as pinbot", u.Exec.Command), "--insecure-kubeconfig-exec")
		}
		if u.AuthProvider != nil && !t.KubeConfigExec {
			refuse(at+"auth-provider", fmt.Sprintf("the auth provider %q runs inside pinbot", u.AuthProvider.Name), "--insecure-kubeconfig-exec")
		}
		if !t.KubeConfigFiles {
			if u.TokenFile != "" {
				refuse(at+"tokenFile", "it would send a file of pinbot's as the bearer token", files)
			}
			if u.ClientCertificate != "" {
				refuse(at+"client-certificate", "a file path on pinbot's disk", files)
			}
			if u.ClientKey != "" {
				refuse(at+"client-key", "a file path on pinbot's disk", files)
			}
		}
	}
	if c := kc.Clusters[ctx.Cluster]; c != nil && c.CertificateAuthority != "" && !t.KubeConfigFiles {
		refuse(fmt.Sprintf("clusters[%s].cluster.certificate-authority", ctx.Cluster), "a file path on pinbot's disk", files)
	}
	return errors.Join(errs...)
}
