package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/homedir"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/kubeclient"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/discover"
	"pinbot.dev/pinbot/reconciler/gitsource"
	"pinbot.dev/pinbot/reconciler/spoke"
	"pinbot.dev/pinbot/serve/installed"
)

// Source is where pinbot's config comes from and the cluster its
// Reconcilers run on: what serve reloads from, and what every command
// reading the cluster opens. The commands bind it to their flags.
type Source struct {
	// File is the config file; serve looks at it every Every.
	File  string
	Every time.Duration
	// Kubeconfig and Context name the cluster as kubectl's flags do.
	Kubeconfig, Context string
	// CacheDir keeps the fetched Git objects, a directory of pinbot's own
	// (default gitsource.DefaultCacheDir).
	CacheDir string
	// Spokes is what the cluster credentials others write may carry.
	Spokes spoke.Trust
	// Options are more options of every Reconciler.
	Options []reconciler.Option
	// Paths, when set, maps the credential paths the config names
	// (config.Config.MapPaths): FromCluster's.
	Paths func(string) string
	// CAs, when set, maps each CA bundle of the config, "" included, to
	// one that also holds the CAs serve's container trusts: FromCluster's.
	CAs func(string) string
	// Replica, when set, names this replica in the User-Agent of every
	// request to a cluster ("… replica/<id>"), so the API server's audit
	// log and its priority and fairness metrics tell replicas apart.
	Replica string
}

// Load reads and validates the config file.
func (s Source) Load() (*Config, error) {
	cfg, err := Load(s.File)
	if err == nil && s.Paths != nil {
		cfg.MapPaths(s.Paths)
	}
	if err == nil && s.CAs != nil {
		cfg.MapCAs(s.CAs)
	}
	return cfg, err
}

// FromCluster points s at the config pinbot serve runs in namespace ns,
// as the kustomize base or the chart installs it (package installed):
// its config file and the credentials its Pod mounts, laid out in a
// private directory that done removes. A credential the caller may not
// read is left out with a warning on ctx's logger; a token left out is
// then taken from the environment, as for a config without one.
func (s *Source) FromCluster(ctx context.Context, ns string) (done func() error, err error) {
	kube, err := s.Kube()
	if err != nil {
		return nil, fmt.Errorf("no config file given, and no cluster to read pinbot serve's from: %w", err)
	}
	srv, err := installed.Find(ctx, kube, ns)
	if err != nil {
		return nil, err
	}
	file, ok := srv.Local(srv.Config)
	if !ok {
		srv.Close()
		return nil, fmt.Errorf("pinbot serve %s: its config %s is in no volume pinbot could read: %s", srv.Deployment, srv.Config, strings.Join(srv.Unread, "; "))
	}
	for _, u := range srv.Unread {
		logctx.From(ctx).Warn("a volume of pinbot serve could not be read; its files are left out (a token left out comes from the environment)", "volume", u)
	}
	s.File, s.Paths, s.CAs = file, srv.Path, srv.WithCAs
	return srv.Close, nil
}

// Config loads the config file and adds the apps its discover: entries
// select now.
func (s Source) Config(ctx context.Context) (*Config, error) {
	return s.config(ctx, func(ctx context.Context, ds []config.Discovery) ([]config.App, error) {
		d, err := s.Dynamic()
		if err != nil {
			return nil, err
		}
		return discover.List(ctx, d, ds)
	})
}

// config is Config with the apps discovered read by discovered.
func (s Source) config(ctx context.Context, discovered func(context.Context, []config.Discovery) ([]config.App, error)) (*Config, error) {
	cfg, err := s.Load()
	if err != nil || len(cfg.Discover) == 0 {
		return cfg, err
	}
	apps, err := discovered(ctx, cfg.Discover)
	if err != nil {
		return nil, err
	}
	merged, skipped := cfg.WithDiscovered(apps)
	if len(skipped) > 0 {
		logctx.From(ctx).Info("discovered apps left out: an app of that name is listed, or was discovered first", "apps", skipped)
	}
	cfg.Config = *merged
	return cfg, nil
}

// Build makes a Reconciler of cfg on the cluster with opts and s.Options,
// and the Git cache it shares with promotions.
func (s Source) Build(cfg *Config, opts ...reconciler.Option) (*reconciler.Reconciler, *gitforge.Cache, error) {
	rc, err := s.RestConfig()
	if err != nil {
		return nil, nil, err
	}
	dir := s.CacheDir
	if dir == "" {
		if dir, err = gitsource.DefaultCacheDir(); err != nil {
			return nil, nil, err
		}
	}
	cache, err := gitforge.NewCache(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("flag --cache-dir: %w", err)
	}
	opts = append(append(opts, s.Options...), reconciler.WithGitCache(cache), reconciler.WithSpokeTrust(s.Spokes))
	r, err := reconciler.New(&cfg.Config, rc, opts...)
	if err != nil {
		return nil, nil, err
	}
	return r, cache, nil
}

// RestConfig resolves the cluster as kubectl does: Kubeconfig, else
// $KUBECONFIG (a path list, merged), else ~/.kube/config, and Context over
// the current-context; with no kubeconfig at all, the in-cluster service
// account.
func (s Source) RestConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = s.Kubeconfig
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		// The home directory as it is now, not as it was at start-up.
		rules.Precedence = []string{filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)}
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: s.Context}
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err):
		return nil, errors.New("no kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config), and not running in a cluster")
	case err != nil && s.Context != "":
		return nil, fmt.Errorf("flag --context %q: loading kubeconfig: %w", s.Context, err)
	case err != nil:
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	if s.Replica != "" {
		rc.UserAgent = rest.DefaultKubernetesUserAgent() + " replica/" + s.Replica
	}
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = reconciler.QPS, reconciler.Burst
	}
	return rc, nil
}

// Kube is a client of the cluster.
func (s Source) Kube() (kubernetes.Interface, error) {
	rc, err := s.RestConfig()
	if err != nil {
		return nil, err
	}
	kube, err := kubeclient.New(rc)
	if err != nil {
		return nil, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	return kube, nil
}

// Dynamic is a dynamic client of the cluster, for discover:.
func (s Source) Dynamic() (dynamic.Interface, error) {
	rc, err := s.RestConfig()
	if err != nil {
		return nil, err
	}
	return dynamic.NewForConfig(rc)
}
