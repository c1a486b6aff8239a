package spoke

import (
	"fmt"
	"slices"
	"strings"
)

// Trust is what pinbot's operator allows of the cluster credentials that
// others write: a Flux Kustomization's kubeConfig Secret and an Argo CD
// cluster Secret are data, and by default carry no behaviour. Their
// authors are not pinbot's operator: whoever may write a Secret in a
// watched namespace must not run a command as pinbot, read a file of
// pinbot's (its own ServiceAccount token, say) or send it to a server of
// their choosing.
type Trust struct {
	// KubeConfigExec allows a kubeconfig's user.exec and user.auth-provider
	// plugins (--insecure-kubeconfig-exec, as Flux's flag of that name).
	KubeConfigExec bool
	// KubeConfigFiles allows a kubeconfig's file paths: user.tokenFile,
	// user.client-certificate, user.client-key and
	// cluster.certificate-authority (--insecure-kubeconfig-files).
	KubeConfigFiles bool
	// ArgoCDExec lists the commands an Argo CD cluster Secret's
	// execProviderConfig may run, and allows awsAuthConfig when it holds
	// "argocd-k8s-auth". A bare name is looked up on pinbot's PATH and
	// matches only itself; a path matches only that path.
	ArgoCDExec []string
	// ArgoCDNamespaces are where Argo CD cluster Secrets are read: Argo
	// CD's own namespace, as Argo CD itself reads them.
	ArgoCDNamespaces []string
	// ArgoCDAppNamespace also reads them from the namespace of the
	// Application being verified (apps in any namespace whose cluster
	// Secrets sit beside them), which Argo CD itself never does.
	ArgoCDAppNamespace bool
}

// DefaultTrust runs no plugin but Argo CD's own argocd-k8s-auth, reads no
// file, and reads Argo CD's cluster Secrets only from the namespace
// "argocd".
func DefaultTrust() Trust {
	return Trust{ArgoCDExec: []string{argoCDAWSHelper}, ArgoCDNamespaces: []string{"argocd"}}
}

// SecretNamespaces lists where the cluster Secrets of an Application in
// appNamespace are read, in order, each once.
func (t Trust) SecretNamespaces(appNamespace string) []string {
	out := slices.Clone(t.ArgoCDNamespaces)
	if t.ArgoCDAppNamespace && !slices.Contains(out, appNamespace) {
		out = append(out, appNamespace)
	}
	return out
}

// execAllowed reports whether an Argo CD cluster Secret may run command.
func (t Trust) execAllowed(command string) bool {
	return slices.Contains(t.ArgoCDExec, command)
}

// unsafeEnv reports whether an exec plugin's environment variable would
// let the Secret's author choose what an allowed command loads or runs.
func unsafeEnv(name string) bool {
	n := strings.ToUpper(name)
	return n == "PATH" || strings.HasPrefix(n, "LD_") || strings.HasPrefix(n, "DYLD_")
}

// RefusedError is a credential field pinbot refuses by default, naming the
// field and the flag that allows it.
type RefusedError struct {
	Field, Why, Flag string
}

// Error implements error.
func (e *RefusedError) Error() string {
	if e.Flag == "" {
		return fmt.Sprintf("%s: %s; refused", e.Field, e.Why)
	}
	return fmt.Sprintf("%s: %s; refused unless pinbot runs with %s", e.Field, e.Why, e.Flag)
}
