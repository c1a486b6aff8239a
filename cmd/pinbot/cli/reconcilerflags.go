package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/discover"
	"pinbot.dev/pinbot/reconciler/gitsource"
	"pinbot.dev/pinbot/reconciler/spoke"
	"pinbot.dev/pinbot/serve"
)

// reconcilerFlags are the flags every reconciler command shares: reconcile,
// sync, verify, status and history.
type reconcilerFlags struct {
	config     string
	kubeconfig string
	context    string
	cacheDir   string
	gitCache   *gitforge.Cache // open's, shared with serve's promotions
	spokes     spoke.Trust
}

func (f *reconcilerFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.config, "config", os.Getenv(configEnv), "reconciler config file (required; default $"+configEnv+")")
	f.bindCluster(cmd)
	cmd.Flags().StringVar(&f.cacheDir, "cache-dir", "", "where fetched Git objects are kept, a directory of pinbot's own (default $XDG_CACHE_HOME/pinbot)")
	f.bindSpokes(cmd)
}

// bindSpokes binds what the cluster credentials others write may carry
// (spoke.Trust): data only, unless the operator allows more.
func (f *reconcilerFlags) bindSpokes(cmd *cobra.Command) {
	def := spoke.DefaultTrust()
	fl := cmd.Flags()
	fl.BoolVar(&f.spokes.KubeConfigExec, "insecure-kubeconfig-exec", false,
		"allow exec and auth-provider plugins in Flux kubeConfig Secrets: whoever writes such a Secret then runs commands as pinbot")
	fl.BoolVar(&f.spokes.KubeConfigFiles, "insecure-kubeconfig-files", false,
		"allow file paths (tokenFile, client certificate and key, CA) in Flux kubeConfig Secrets: whoever writes such a Secret then reads pinbot's files, its ServiceAccount token among them")
	fl.StringSliceVar(&f.spokes.ArgoCDExec, "argocd-exec-allow", def.ArgoCDExec,
		"the commands an Argo CD cluster Secret's execProviderConfig may run (a name on PATH, or an absolute path); argocd-k8s-auth also allows awsAuthConfig")
	fl.StringSliceVar(&f.spokes.ArgoCDNamespaces, "argocd-cluster-namespaces", def.ArgoCDNamespaces,
		"the namespaces Argo CD cluster Secrets are read from: Argo CD's own, as Argo CD reads them")
	fl.BoolVar(&f.spokes.ArgoCDAppNamespace, "argocd-clusters-in-app-namespace", false,
		"also read Argo CD cluster Secrets from the namespace of the Application verified (Argo CD itself never does)")
}

// bindCluster binds --kubeconfig and --context, as kubectl has them.
func (f *reconcilerFlags) bindCluster(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "",
		"kubeconfig file (default $KUBECONFIG, else ~/.kube/config, else the in-cluster service account)")
	cmd.Flags().StringVar(&f.context, "context", "", "kubeconfig context to use (default: its current-context)")
}

// Validate checks the flags.
func (f *reconcilerFlags) Validate() error {
	if f.config == "" {
		return usageErrorf("flag --config: required")
	}
	return nil
}

// load reads the config file: the reconciler's config with serve's
// promote section, one file for every reconciler command.
func (f *reconcilerFlags) load() (*serve.Config, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return serve.Load(f.config)
}

// open loads the config and returns a Reconciler on the cluster, and the
// config. An app named in apps must be in the config (else bad usage).
// Environment defaults are resolved here: KUBECONFIG, the in-cluster
// config, and the registry credentials of the docker config
// (DOCKER_CONFIG); the reconciler reads PINBOT_GITEA_TOKEN for a forge
// without tokenFile itself.
func (f *reconcilerFlags) open(apps ...string) (*reconciler.Reconciler, *serve.Config, error) {
	return f.openWith(nil, apps...)
}

// openReading is open for a command that reads only what pinbot stored in
// the cluster (history, stored status): no forge token is needed.
func (f *reconcilerFlags) openReading(apps ...string) (*reconciler.Reconciler, *serve.Config, error) {
	return f.openWith([]reconciler.Option{reconciler.WithoutForge()}, apps...)
}

func (f *reconcilerFlags) openWith(opts []reconciler.Option, apps ...string) (*reconciler.Reconciler, *serve.Config, error) {
	cfg, err := f.load()
	if err != nil {
		return nil, nil, err
	}
	if len(cfg.Discover) > 0 {
		// The apps discover: selects, as serve runs them.
		rc, err := f.restConfig()
		if err != nil {
			return nil, nil, err
		}
		dyn, err := dynamic.NewForConfig(rc)
		if err != nil {
			return nil, nil, err
		}
		found, err := discover.List(context.Background(), dyn, cfg.Discover)
		if err != nil {
			return nil, nil, err
		}
		merged, _ := cfg.WithDiscovered(found)
		cfg.Config = *merged
	}
	for _, a := range apps {
		if _, err := cfg.App(a); err != nil {
			return nil, nil, usageErrorf("argument APP: %w", err)
		}
	}
	r, err := f.build(cfg, opts)
	if err != nil {
		return nil, nil, err
	}
	return r, cfg, nil
}

// build returns a Reconciler of cfg on the cluster, with the Git cache of
// --cache-dir.
func (f *reconcilerFlags) build(cfg *serve.Config, opts []reconciler.Option) (*reconciler.Reconciler, error) {
	rc, err := f.restConfig()
	if err != nil {
		return nil, err
	}
	dir := f.cacheDir
	if dir == "" {
		if dir, err = gitsource.DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	if f.gitCache, err = gitforge.NewCache(dir); err != nil {
		return nil, fmt.Errorf("flag --cache-dir: %w", err)
	}
	return reconciler.New(&cfg.Config, rc, append(opts, reconciler.WithGitCache(f.gitCache), reconciler.WithSpokeTrust(f.spokes))...)
}

// restConfig resolves the cluster as kubectl does: --kubeconfig, else
// $KUBECONFIG (a path list, merged), else ~/.kube/config, and --context
// over the current-context; with no kubeconfig at all, the in-cluster
// service account.
func (f *reconcilerFlags) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		// The home directory as it is now, not as it was at start-up.
		rules.Precedence = []string{filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)}
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: f.context}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err):
		return nil, errors.New("no kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config), and not running in a cluster")
	case err != nil && f.context != "":
		return nil, fmt.Errorf("flag --context %q: loading kubeconfig: %w", f.context, err)
	case err != nil:
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return rc, nil
}
