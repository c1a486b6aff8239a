package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/ignore"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/trust/policy"
)

// Defaults applied by Load to fields the config leaves empty.
const (
	DefaultInterval       = 60 * time.Second
	DefaultBranch         = "main"
	DefaultStateNamespace = "pinbot-system"
	DefaultVerifyTimeout  = 10 * time.Minute
	DefaultWaveTimeout    = 5 * time.Minute
	DefaultDriftWarLimit  = 5
	DefaultDriftWarWindow = 10 * time.Minute
)

// Config is the reconciler's configuration file. See the README section
// "Reconciler config" for a commented example.
type Config struct {
	// Interval between two polls of each app's branch. Default 60s.
	Interval Duration `yaml:"interval"`
	// StateNamespace holds pinbot's history and status ConfigMaps. It must
	// exist (deploy/namespace.yaml creates it). Default "pinbot-system".
	StateNamespace string `yaml:"stateNamespace"`
	// Forge, when set, is the Gitea that receives commit statuses and
	// pull-request comments for apps whose repo lives on it.
	Forge *ForgeConfig `yaml:"forge"`
	// Mirrors are the registry mirrors Nodes pull through. A runtime that
	// reports a pinned digest under a mirror's name is Verified either way
	// (digests are compared, not names); a rule makes the proof say which
	// mirror it was.
	Mirrors []Mirror `yaml:"mirrors"`
	// Signatures is the signature policy of apps that verifySignatures
	// (see package trust): the schema of .pinbot.yaml's signatures:, with
	// key and trusted root paths relative to this file's directory (a
	// mounted Secret, say).
	Signatures policy.Rules `yaml:"signatures"`
	// Apps are reconciled independently of each other.
	Apps []App `yaml:"apps"`
	// Discover selects Argo CD Applications and Flux Kustomizations,
	// each a verify-only app named after its object (see Discovery).
	Discover []Discovery `yaml:"discover"`
	// ArgoCD is Argo CD's API server, for the apps that read their Pods
	// through it (via: api).
	ArgoCD *ArgoCDServer `yaml:"argocd"`
	file   string        // where the config was read from, for error messages
	root   *yaml.Node    // its document, for the lines of its keys
	dir    string        // the file's directory, once ResolvePaths knows it
}

// SignaturesDir is the directory the policy's key and trusted root paths
// are relative to: the config file's.
func (c *Config) SignaturesDir() string {
	if c.dir == "" {
		return "."
	}
	return c.dir
}

// Mirror maps an upstream registry or repository prefix to its mirror's:
// {from: docker.io, to: mirror.internal:5000/hub}.
type Mirror struct {
	// From is the upstream registry or repository prefix.
	From string `yaml:"from"`
	// To is the mirror's registry or repository prefix that Nodes pull
	// From's images through.
	To string `yaml:"to"`
}

// Rules returns the mirror rules in the normal form verification compares
// (validated by Validate).
func (c *Config) Rules() []verdict.Mirror {
	var out []verdict.Mirror
	for _, m := range c.Mirrors {
		from, err1 := mirrorPrefix(m.From)
		to, err2 := mirrorPrefix(m.To)
		if err1 == nil && err2 == nil {
			out = append(out, verdict.Mirror{From: from, To: to})
		}
	}
	return out
}

// mirrorPrefix normalises a registry host or repository prefix, as image
// references are: "docker.io" is "index.docker.io/". Two path components
// are appended and cut again so that no "library/" is inserted.
func mirrorPrefix(p string) (string, error) {
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return "", fmt.Errorf("empty")
	}
	repo, err := imageref.ParseRepository(p + "/pinbot-probe/x")
	if err != nil {
		return "", errors.New("not a valid registry host and path")
	}
	return strings.TrimSuffix(repo, "pinbot-probe/x"), nil
}

// ForgeConfig locates the Gitea API and its credentials.
type ForgeConfig struct {
	// URL is Gitea's base URL, https://gitea.example.
	URL string `yaml:"url"`
	// TokenFile holds the Gitea token (a mounted Secret's key).
	TokenFile string `yaml:"tokenFile"`
	// CAFile is a PEM bundle of the CAs that sign Gitea's certificate,
	// beside the system's.
	CAFile string `yaml:"caFile"`
	// Insecure allows a plain-HTTP URL to a host that is not loopback,
	// which sends the token in clear (as --insecure-forge does).
	Insecure bool `yaml:"insecure"`
}

// ArgoCDServer is Argo CD's API server and an account token that may
// get the applications pinbot verifies through it.
type ArgoCDServer struct {
	// URL is the API server's base URL, https://argocd.example; also
	// argocd-agent's resource proxy.
	URL string `yaml:"url"`
	// TokenFile holds the Argo CD account token.
	TokenFile string `yaml:"tokenFile"`
	// CAFile is a PEM bundle of the CAs that sign the server's
	// certificate, beside the system's.
	CAFile string `yaml:"caFile"`
	// Via is every Argo CD app's way of reading its Pods, unless the app
	// says: "kubernetes" (default) or "api".
	Via string `yaml:"via"`
}

// ArgoCDVia is how app reads its Pods, an Argo CD app: its own via:, else
// the config's argocd.via, else deployer.ViaKubernetes.
func (c *Config) ArgoCDVia(app *App) string {
	switch {
	case app.ArgoCD == nil:
		return ""
	case app.ArgoCD.Via != "":
		return app.ArgoCD.Via
	case c.ArgoCD != nil && c.ArgoCD.Via != "":
		return c.ArgoCD.Via
	}
	return deployer.ViaKubernetes
}

// ClusterRef names another cluster the way a Flux Kustomization's
// spec.kubeConfig does: a Secret holding a kubeconfig, whose current
// context pinbot uses.
type ClusterRef struct {
	// KubeConfig is where the kubeconfig is.
	KubeConfig KubeConfigRef `yaml:"kubeConfig"`
}

// KubeConfigRef is a kubeconfig Secret in the state namespace.
type KubeConfigRef struct {
	// SecretRef names the Secret and its key.
	SecretRef SecretKeyRef `yaml:"secretRef"`
}

// SecretKeyRef is a Secret by name, and one of its keys.
type SecretKeyRef struct {
	// Name is the Secret's name.
	Name string `yaml:"name"`
	// Key holds the kubeconfig. Default: "value", else "value.yaml", as
	// Flux reads it.
	Key string `yaml:"key"`
}

// Auth holds the credentials for one app's Git repository. Paths relative to
// the config file are resolved against its directory.
type Auth struct {
	// TokenFile holds the token pinbot clones with over HTTPS.
	TokenFile string `yaml:"tokenFile"`
	// CAFile is a PEM bundle of the CAs that sign the Git server's
	// certificate, beside the system's.
	CAFile string `yaml:"caFile"`
}

// SyncPolicy says what pinbot may do on its own. Every field defaults to
// false: detection only, with a person running `pinbot sync`.
type SyncPolicy struct {
	// Automated applies each new commit of the branch.
	Automated bool `yaml:"automated"`
	// SelfHeal re-applies Git's version when a live object is out of
	// sync with it.
	SelfHeal bool `yaml:"selfHeal"`
	// Prune deletes inventory objects no longer rendered from Git (issue 5).
	Prune bool `yaml:"prune"`
	// AllowEmpty accepts a render that yields no objects. Off, an empty
	// render stops the sync: a wrong path or a bad rebase must not look
	// like "nothing to run".
	AllowEmpty bool `yaml:"allowEmpty"`
}

// App is one directory of one branch that pinbot keeps applied to the
// cluster.
type App struct {
	// Name identifies the app in commands, labels and ConfigMap names; a
	// DNS-1123 label.
	Name string `yaml:"name"`
	// Repo is the Git URL (http, https or file).
	Repo string `yaml:"repo"`
	// DeployedFrom are the Git URLs a discovered app's deployer object
	// names (an Application's sources), so that serve runs the release
	// chains they declare; never read from the file.
	DeployedFrom []string `yaml:"-"`
	// Destination is where a discovered app's deployer object deploys
	// to, as "CLUSTER/NAMESPACE" ("" when it names no namespace); never
	// read from the file. See ShardKey.
	Destination string `yaml:"-"`
	// Branch to follow. Default "main".
	Branch string `yaml:"branch"`
	// Path of the manifests inside the repository, slash-separated; "" or
	// "." is the root.
	Path string `yaml:"path"`
	// Namespace is the default namespace of namespaced objects that name
	// none.
	Namespace string `yaml:"namespace"`
	// AllowNamespaces lists the namespaces the app may write to. Empty
	// means just Namespace; when set it must include Namespace.
	AllowNamespaces []string `yaml:"allowNamespaces"`
	// AllowClusterScoped lists the cluster-scoped kinds the app may apply,
	// as "Kind" (core group) or "group/Kind", or "*" for any. A Namespace
	// object whose name is in AllowNamespaces is always allowed.
	AllowClusterScoped []string `yaml:"allowClusterScoped"`
	// Auth for the repository; when nil and Forge's URL shares the repo's
	// host, Forge's credentials are used.
	Auth *Auth `yaml:"auth"`
	// SyncPolicy, all false by default.
	SyncPolicy SyncPolicy `yaml:"syncPolicy"`
	// VerifyTimeout is how long after a sync the rollout may take before
	// the commit status turns to failure. Default 10m.
	VerifyTimeout Duration `yaml:"verifyTimeout"`

	// WaveTimeout bounds how long one sync wave may take to become healthy
	// before the sync stops and names the object. Default 5m.
	WaveTimeout Duration `yaml:"waveTimeout"`
	// Ignore lists fields that are never diffed or healed: the one-line
	// declaration for a field another controller owns.
	Ignore []ignore.Rule `yaml:"ignore"`
	// DriftWar is the self-heal guard: an object healed more than Limit
	// times within Window is no longer healed, and the app is Degraded.
	DriftWar DriftWar `yaml:"driftWar"`
	// Helm renders Path, a Helm chart, with these settings (see
	// HelmConfig); a chart renders without them too.
	Helm *HelmConfig `yaml:"helm"`

	// ArgoCD, when set, makes the app verify-only: the Argo CD
	// Application names the repository, path and revision, and pinbot
	// never applies, heals or prunes it.
	ArgoCD *deployer.ArgoCDApp `yaml:"argocd"`
	// Flux, when set, makes the app verify-only as ArgoCD does, for a
	// Flux Kustomization.
	Flux *deployer.FluxApp `yaml:"flux"`
	// Cluster, when set, is where the app is applied, healed, pruned and
	// verified: another cluster, reached with a kubeconfig Secret in the
	// state namespace. Default: the cluster pinbot runs in.
	Cluster *ClusterRef `yaml:"cluster"`
	// VerifySignatures checks every pinned digest of a commit's render
	// against the config's signatures: policy before the commit is
	// applied; a digest the policy refuses refuses the sync.
	VerifySignatures bool `yaml:"verifySignatures"`
	// ProofObject, when false, keeps serve from writing the app's Proof
	// object (docs/waves.md); default true.
	ProofObject *bool `yaml:"proofObject,omitempty"`

	line int        // line of the app in the config file
	node *yaml.Node // the app's mapping, for the lines of its keys
}

// DriftWar configures the self-heal guard.
type DriftWar struct {
	// Limit is how many heals of one object Window allows. Default 5.
	Limit int `yaml:"limit"`
	// Window is the sliding window. Default 10m.
	Window Duration `yaml:"window"`
}

// Duration is a time.Duration written as "60s" or "5m" in YAML.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!int" {
		return fmt.Errorf("line %d: want a duration such as 60s, got %s", n.Line, clip.Quote(n.Value))
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: want a duration such as 60s, got %s", n.Line, clip.Quote(n.Value))
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration in Go's notation.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// App returns the app called name.
func (c *Config) App(name string) (*App, error) {
	var names []string
	for i := range c.Apps {
		if c.Apps[i].Name == name {
			return &c.Apps[i], nil
		}
		names = append(names, c.Apps[i].Name)
	}
	return nil, fmt.Errorf("%s: no app %s (apps: %s)", c.file, clip.Quote(name), strings.Join(names, ", "))
}

// File is the path the config was read from.
func (c *Config) File() string { return c.file }

func dnsLabel(s string) bool { return len(validation.IsDNS1123Label(s)) == 0 }

func dnsSubdomain(s string) bool { return len(validation.IsDNS1123Subdomain(s)) == 0 }
