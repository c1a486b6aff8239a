package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/opfile"
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

// Load reads, strictly decodes, validates and defaults the config at file.
// Errors name file:line.
func Load(file string) (*Config, error) { return LoadWith(file, Parse) }

// MaxFile bounds the config file pinbot reads, as it bounds .pinbot.yaml
// and token files: a link to /dev/zero must not take its memory.
const MaxFile = 4 << 20

// LoadWith reads the config at file with parse, a Parse of a config that
// holds this one (serve's), and resolves its relative paths against the
// file's directory. The file is read through package opfile: at most
// MaxFile bytes of a regular file, never blocking on a FIFO.
func LoadWith[C interface{ ResolvePaths(dir string) }](file string, parse func(file string, data []byte) (C, error)) (C, error) {
	var zero C
	b, err := opfile.Read(file, MaxFile)
	if err != nil {
		return zero, fmt.Errorf("reading config: %w", err)
	}
	c, err := parse(file, b)
	if err != nil {
		return zero, err
	}
	c.ResolvePaths(filepath.Dir(file))
	return c, nil
}

// Parse decodes, validates and defaults a config held in memory; file only
// names it in errors. Relative credential paths are left as they are.
func Parse(file string, data []byte) (*Config, error) {
	c := &Config{}
	root, err := Decode(file, data, c)
	if err != nil {
		return nil, err
	}
	if err := c.Complete(file, root); err != nil {
		return nil, err
	}
	return c, nil
}

// Decode strictly decodes data into v (a *Config, or a struct that
// inlines one): an unknown key anywhere is an error naming file:line. It
// returns the document's node tree, for the lines of its keys.
func Decode(file string, data []byte, v any) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty config", file)
		}
		return nil, yamlError(file, err, data)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlError(file, err, data)
	}
	return &root, nil
}

// Complete finishes a config Decode filled from file: it notes each app's
// line (from root, the document Decode returned), validates and sets the
// defaults.
func (c *Config) Complete(file string, root *yaml.Node) error {
	c.file, c.root = file, root
	for i, n := range ListNodes(root, "apps") {
		if i < len(c.Apps) {
			c.Apps[i].line, c.Apps[i].node = n.Line, n
		}
	}
	if err := c.Validate(); err != nil {
		return err
	}
	c.setDefaults()
	return nil
}

var (
	yamlLine     = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownField = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
)

// yamlError turns yaml.v3's "line N: msg" errors into "file:N: msg",
// with a hint where the key there is written as Argo CD writes it.
func yamlError(file string, err error, data []byte) error {
	var lines []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		lines = te.Errors
	} else {
		lines = []string{err.Error()}
	}
	var errs []error
	for _, l := range lines {
		m := yamlLine.FindStringSubmatch(l)
		if m == nil {
			errs = append(errs, fmt.Errorf("%s: %s", file, l))
			continue
		}
		msg := m[2]
		if f := unknownField.FindStringSubmatch(msg); f != nil {
			msg = fmt.Sprintf("unknown field %s", clip.Quote(f[1]))
		}
		if n, err := strconv.Atoi(m[1]); err == nil {
			if hint := hintAt(data, n); hint != "" {
				msg += " (" + hint + ")"
			}
		}
		errs = append(errs, fmt.Errorf("%s:%s: %s", file, m[1], msg))
	}
	return errors.Join(errs...)
}

func (c *Config) setDefaults() {
	if c.Interval == 0 {
		c.Interval = Duration(DefaultInterval)
	}
	if c.StateNamespace == "" {
		c.StateNamespace = DefaultStateNamespace
	}
	for i := range c.Apps {
		a := &c.Apps[i]
		if a.VerifyOnly() {
			continue // the deployer's object says where and what (verifyonly.go)
		}
		if a.Branch == "" {
			a.Branch = DefaultBranch
		}
		a.Path = path.Clean(a.Path) // "" becomes "."
		if len(a.AllowNamespaces) == 0 {
			a.AllowNamespaces = []string{a.Namespace}
		}
		if a.VerifyTimeout == 0 {
			a.VerifyTimeout = Duration(DefaultVerifyTimeout)
		}
		if a.WaveTimeout == 0 {
			a.WaveTimeout = Duration(DefaultWaveTimeout)
		}
		if a.DriftWar.Limit == 0 {
			a.DriftWar.Limit = DefaultDriftWarLimit
		}
		if a.DriftWar.Window == 0 {
			a.DriftWar.Window = Duration(DefaultDriftWarWindow)
		}
	}
}

// ResolvePaths makes credential paths relative to the config file absolute.
func (c *Config) ResolvePaths(dir string) {
	c.dir = dir
	c.MapPaths(func(p string) string {
		if !filepath.IsAbs(p) {
			return filepath.Join(dir, p)
		}
		return p
	})
}

// MapPaths replaces each credential path the config names (token files
// and CA bundles of the forge, Argo CD and the apps' repositories) with
// f's answer; "" is none.
func (c *Config) MapPaths(f func(string) string) {
	each := func(p *string) {
		if *p != "" {
			*p = f(*p)
		}
	}
	if c.Forge != nil {
		each(&c.Forge.TokenFile)
		each(&c.Forge.CAFile)
	}
	if c.ArgoCD != nil {
		each(&c.ArgoCD.TokenFile)
		each(&c.ArgoCD.CAFile)
	}
	for i := range c.Apps {
		if a := c.Apps[i].Auth; a != nil {
			each(&a.TokenFile)
			each(&a.CAFile)
		}
	}
}

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
