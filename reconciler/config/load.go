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

	"gopkg.in/yaml.v3"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/opfile"
)

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

// MapCAs replaces each CA bundle the config names (the forge's, Argo
// CD's and the apps' repositories'), "" included, with f's answer.
func (c *Config) MapCAs(f func(string) string) {
	if c.Forge != nil {
		c.Forge.CAFile = f(c.Forge.CAFile)
	}
	if c.ArgoCD != nil {
		c.ArgoCD.CAFile = f(c.ArgoCD.CAFile)
	}
	for i := range c.Apps {
		if a := c.Apps[i].Auth; a != nil {
			a.CAFile = f(a.CAFile)
		}
	}
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
