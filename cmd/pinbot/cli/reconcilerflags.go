package cli

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/spoke"
	"pinbot.dev/pinbot/serve"
)

// reconcilerFlags are the flags every reconciler command shares: reconcile,
// sync, verify, status and history.
type reconcilerFlags struct {
	config string
	// namespace is pinbot's, whose serve's config a reading command
	// reads when --config is not given (reading).
	namespace  string
	reading    bool
	kubeconfig string
	context    string
	cacheDir   string
	spokes     spoke.Trust
}

func (f *reconcilerFlags) bind(cmd *cobra.Command) {
	f.bindConfig(cmd)
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

// bindConfig binds --config and the cluster's flags.
func (f *reconcilerFlags) bindConfig(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.config, "config", os.Getenv(configEnv), "reconciler config file (required; default $"+configEnv+")")
	f.bindCluster(cmd)
}

// bindCluster binds --kubeconfig and --context, as kubectl has them.
func (f *reconcilerFlags) bindCluster(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "",
		"kubeconfig file (default $KUBECONFIG, else ~/.kube/config, else the in-cluster service account)")
	cmd.Flags().StringVar(&f.context, "context", "", "kubeconfig context to use (default: its current-context)")
}

// bindReading binds the flags of a command that reads the cluster: bind's,
// with --config optional, and -n for pinbot's namespace.
func (f *reconcilerFlags) bindReading(cmd *cobra.Command) {
	f.bind(cmd)
	f.bindNamespace(cmd)
}

// bindNamespace binds -n: without --config, the config is the one pinbot
// serve runs in that namespace.
func (f *reconcilerFlags) bindNamespace(cmd *cobra.Command) {
	f.reading = true
	cmd.Flags().Lookup("config").Usage = "pinbot's config file (default $" + configEnv + ", else the one pinbot serve runs in --namespace)"
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "pinbot-system",
		"pinbot's namespace: without --config, read the config (and the credentials you may read) that pinbot serve runs there")
}

// Validate checks the flags.
func (f *reconcilerFlags) Validate() error {
	if f.config == "" && !f.reading {
		return usageErrorf("flag --config: required")
	}
	return nil
}

// source is the flags' serve.Source: the config file and the cluster.
// Without --config, a reading command reads serve's from -n's namespace.
func (f *reconcilerFlags) source(ctx context.Context) (serve.Source, error) {
	if err := f.Validate(); err != nil {
		return serve.Source{}, err
	}
	src := serve.Source{File: f.config, Kubeconfig: f.kubeconfig, Context: f.context, CacheDir: f.cacheDir, Spokes: f.spokes}
	if f.config != "" {
		return src, nil
	}
	done, err := src.FromCluster(ctx, f.namespace)
	if err == nil {
		atExit(ctx, done)
	}
	return src, err
}

// open loads the config and returns a Reconciler on the cluster, and the
// config (serve.Source). An app named in apps must be in the config
// (else bad usage). Environment defaults are resolved there: KUBECONFIG,
// the in-cluster config, and the registry credentials of the docker
// config (DOCKER_CONFIG); the reconciler reads PINBOT_GITEA_TOKEN for a
// forge without tokenFile itself.
func (f *reconcilerFlags) open(ctx context.Context, apps ...string) (*reconciler.Reconciler, *serve.Config, error) {
	return f.openWith(ctx, nil, apps)
}

// openReading is open for a command that reads only what pinbot stored in
// the cluster (history, stored status): no forge token is needed.
func (f *reconcilerFlags) openReading(ctx context.Context, apps ...string) (*reconciler.Reconciler, *serve.Config, error) {
	return f.openWith(ctx, []reconciler.Option{reconciler.WithoutForge()}, apps)
}

func (f *reconcilerFlags) openWith(ctx context.Context, opts []reconciler.Option, apps []string) (*reconciler.Reconciler, *serve.Config, error) {
	src, err := f.source(ctx)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := src.Config(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, a := range apps {
		if _, err := cfg.App(a); err != nil {
			return nil, nil, usageErrorf("argument APP: %w", err)
		}
	}
	r, _, err := src.Build(cfg, opts...)
	return r, cfg, err
}
