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
}

func (f *reconcilerFlags) bind(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.config, "config", os.Getenv(configEnv), "reconciler config file (required; default $"+configEnv+")")
	f.bindCluster(cmd)
	cmd.Flags().StringVar(&f.cacheDir, "cache-dir", "", "where fetched Git objects are kept, a directory of pinbot's own (default $XDG_CACHE_HOME/pinbot)")
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
		if dir, err = reconciler.DefaultCacheDir(); err != nil {
			return nil, err
		}
	}
	if f.gitCache, err = gitforge.NewCache(dir); err != nil {
		return nil, fmt.Errorf("flag --cache-dir: %w", err)
	}
	return reconciler.New(&cfg.Config, rc, append(opts, reconciler.WithGitCache(f.gitCache))...)
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
