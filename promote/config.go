package promote

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/pins"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/waves"
	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/policy"
)

// ConfigFile is the name of pinbot's optional configuration file at the root
// of the manifest repository.
const ConfigFile = ".pinbot.yaml"

// Defaults of Config.
const (
	defaultTarget       = "default"
	defaultBranchPrefix = "pinbot/"
	DefaultAuthorName   = "pinbot"
	DefaultAuthorEmail  = "pinbot@localhost"
)

// Config is .pinbot.yaml. Every field is optional; unknown fields are
// errors. The schema:
//
//	targets:              # one pull request per (target, image); first match wins
//	  - name: staging     # [a-z0-9][a-z0-9._-]*, used in branch names
//	    paths: ["envs/staging/**"]   # slash globs relative to the repo root; ** spans directories
//	  - name: prod
//	    paths: ["envs/prod/**"]
//	labels: [pinbot]      # added to every pull request (created when missing)
//	reviewers: [alice]    # requested on every new pull request
//	branchPrefix: pinbot/ # branch = <branchPrefix><target>/<image-slug>
//	author:               # commit author; default pinbot <pinbot@localhost>
//	  name: pinbot
//	  email: pinbot@example.com
//	track:                # tags tracked by pins that carry none (digest-only pins)
//	  - image: registry.example/org/app
//	    tag: main
//	    paths: ["envs/staging/**"]   # optional: only pins in these files
//	drift:
//	  minAge: 30m         # hold back a digest younger than this (see Drift)
//	  group: image        # image (default) | target | all: what one drift pull request holds
//	helm:                 # how charts not in the repository take a digest (see helmform.Forms)
//	  - chart: podinfo    # a Flux HelmRelease's spec.chart.spec.chart, an Argo CD source's chart
//	    digest: tag       # key (a digest: beside the tag) | tag (tag: v5@sha256:...) | none
//	signatures:           # who must have signed a digest before it moves (see package trust)
//	  - images: ["registry.example/org/*"]
//	    keys: [keys/cosign.pub]      # paths in this repository
//
// Instead of targets, environments declares a release chain (see
// package release): each environment is a target, CI promotes into the
// first ones, and pinbot serve moves what is proven onward.
//
// With no file there is one target, "default", covering every file.
type Config struct {
	// Targets are the sets of files promoted together: one pull request
	// per (target, image), and the first target whose paths match a file
	// has it. Default: one target, "default", covering every file.
	Targets []Target `yaml:"targets"`
	// Environments declares a release chain instead of targets: each
	// environment is a target, and a digest moves onward only once it
	// is proven where it comes from.
	Environments release.Chain `yaml:"environments"`
	// Labels are added to every pull request, created when missing.
	Labels []string `yaml:"labels"`
	// Reviewers are requested on every new pull request.
	Reviewers []string `yaml:"reviewers"`
	// BranchPrefix starts each promotion branch's name,
	// <branchPrefix><target>/<image>. Default "pinbot/".
	BranchPrefix string `yaml:"branchPrefix"`
	// Author is the commits' author. Default pinbot <pinbot@localhost>.
	Author Author `yaml:"author"`
	// Track names the tag that digest-only pins of an image follow, for
	// drift to watch.
	Track []Track `yaml:"track"`
	// Drift holds back young digests and groups drift's pull requests.
	Drift DriftConfig `yaml:"drift"`
	// Helm says how a chart that is not in the repository takes a
	// digest in its values.
	Helm []HelmChart `yaml:"helm"`
	// Signatures is the signature policy: who must have signed a digest
	// before it moves.
	Signatures policy.Rules `yaml:"signatures"`
	// Trust is Signatures with its keys and trusted roots loaded from
	// the repository; LoadConfig sets it.
	Trust *trust.Verifier `yaml:"-"`
	// AttestationKeys are, by environment, the keys of its
	// attestationKeys, loaded from the repository by LoadConfig: what the
	// upstream's attestation must be signed with.
	AttestationKeys map[string]*trust.Keys `yaml:"-"`
}

// HelmChart declares how a chart that is not in the repository reads an
// image digest from its values, which pinbot cannot render to find out.
type HelmChart struct {
	// Chart is the chart's name: a Flux HelmRelease's
	// spec.chart.spec.chart, an Argo CD source's chart.
	Chart string `yaml:"chart"`
	// Digest is where its values take a digest: "key" (a digest: beside
	// the tag), "tag" (tag: v5@sha256:...) or "none" (left alone).
	Digest string `yaml:"digest"`
}

// HelmFormOf returns the form .pinbot.yaml declares for a chart, if any.
func (c Config) HelmFormOf(chart string) (pins.HelmForm, bool) {
	for _, h := range c.Helm {
		if h.Chart == chart {
			switch h.Digest {
			case "tag":
				return pins.HelmTagDigest, true
			case "none":
				return pins.HelmLeave, true
			}
			return pins.HelmDigestKey, true
		}
	}
	return 0, false
}

// Target is a named set of files promoted together, such as one
// environment's directory.
type Target struct {
	// Name is used in branch names: [a-z0-9][a-z0-9._-]*.
	Name string `yaml:"name"`
	// Paths are slash globs relative to the repository root; ** spans
	// directories.
	Paths []string `yaml:"paths"`
}

// Author is the commit author.
type Author struct {
	// Name is the author's name.
	Name string `yaml:"name"`
	// Email is the author's email address.
	Email string `yaml:"email"`
}

// Track makes digest-only pins of Image (in Paths, when given) follow Tag.
type Track struct {
	// Image is the repository, as the pins name it.
	Image string `yaml:"image"`
	// Tag is the tag its digest-only pins follow.
	Tag string `yaml:"tag"`
	// Paths, when given, limit it to pins in these files (slash globs).
	Paths []string `yaml:"paths"`
}

// DriftConfig holds the drift settings.
type DriftConfig struct {
	// MinAge holds back digests younger than this ("30m", "2h").
	MinAge time.Duration `yaml:"minAge"`
	// Group is what one drift pull request holds: GroupImage (default),
	// GroupTarget or GroupAll.
	Group Group `yaml:"group"`
}

// Group says what one drift pull request holds.
type Group string

// Groupings of drift pull requests.
const (
	// GroupImage opens one pull request per image per target (default).
	GroupImage Group = "image"
	// GroupTarget opens one pull request per target with every moved image.
	GroupTarget Group = "target"
	// GroupAll opens one pull request with every moved image of every target.
	GroupAll Group = "all"
)

var targetNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// LoadConfig reads ConfigFile from the root of fsys (a Git snapshot's
// files, or a confined directory). A missing file gives the defaults; a
// link, or anything but a regular file, is refused.
func LoadConfig(fsys fs.FS) (Config, error) {
	f, err := fsys.Open(ConfigFile)
	if errors.Is(err, fs.ErrNotExist) {
		return ParseConfig(ConfigFile, nil)
	}
	if err != nil {
		return Config{}, fmt.Errorf("reading %s: %w", ConfigFile, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return Config{}, fmt.Errorf("reading %s: not a regular file", ConfigFile)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxConfig+1))
	if err != nil {
		return Config{}, fmt.Errorf("reading %s: %w", ConfigFile, err)
	}
	if len(data) > maxConfig {
		return Config{}, fmt.Errorf("reading %s: larger than %d KiB", ConfigFile, maxConfig>>10)
	}
	c, root, err := parseConfig(ConfigFile, data)
	if err != nil {
		return Config{}, err
	}
	// The keys and trusted roots come from the same commit as the
	// policy that names them.
	if c.Trust, err = trust.Compile(c.Signatures, fsys); err != nil {
		return Config{}, policyError(ConfigFile, root, err)
	}
	for i, e := range c.Environments {
		if !e.RequireAttestation {
			continue
		}
		k, err := trust.LoadKeys(e.AttestationKeys, fsys)
		if err != nil {
			where := ConfigFile
			if l := lineOf(root, "environments", i, "attestationKeys"); l > 0 {
				where += ":" + strconv.Itoa(l)
			}
			return Config{}, fmt.Errorf("%s: environment %s's attestationKeys: %w", where, e.Name, err)
		}
		if c.AttestationKeys == nil {
			c.AttestationKeys = map[string]*trust.Keys{}
		}
		c.AttestationKeys[e.Name] = k
	}
	return c, nil
}

// policyError names the file and line of a signature policy's problem.
func policyError(file string, root *yaml.Node, err error) error {
	var p *policy.Problem
	if !errors.As(err, &p) {
		return fmt.Errorf("%s: %w", file, err)
	}
	where := file
	if l := lineOf(root, append([]any{"signatures", p.Index}, p.Path...)...); l > 0 {
		where += ":" + strconv.Itoa(l)
	}
	return fmt.Errorf("%s: %w", where, err)
}

// maxConfig bounds ConfigFile: a config is a page, not megabytes.
const maxConfig = 1 << 20

// ParseConfig decodes and validates a .pinbot.yaml strictly (unknown fields
// are errors) and fills in the defaults. Errors name file:line.
func ParseConfig(file string, data []byte) (Config, error) {
	c, _, err := parseConfig(file, data)
	return c, err
}

// parseConfig is ParseConfig, returning the document's node tree too.
func parseConfig(file string, data []byte) (Config, *yaml.Node, error) {
	var c Config
	var root yaml.Node
	if len(bytes.TrimSpace(data)) > 0 {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
			return Config{}, nil, yamlError(file, err)
		}
		if err := yaml.Unmarshal(data, &root); err != nil {
			return Config{}, nil, yamlError(file, err)
		}
	}
	if err := c.validate(file, &root); err != nil {
		return Config{}, nil, err
	}
	c.defaults()
	return c, &root, nil
}

// yamlError rewrites yaml.v3's "yaml: line 3: ..." as "file:3: ...".
func yamlError(file string, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			msgs[i] = lineFirst(file, m)
		}
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return fmt.Errorf("%s", lineFirst(file, strings.TrimPrefix(err.Error(), "yaml: ")))
}

var yamlLineRE = regexp.MustCompile(`^line (\d+): `)

var yamlTypeRE = regexp.MustCompile(` in type [\w.\[\]*]+`)

func lineFirst(file, msg string) string {
	msg = yamlTypeRE.ReplaceAllString(msg, "")
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s:%s: %s", file, m[1], msg[len(m[0]):])
	}
	return fmt.Sprintf("%s: %s", file, msg)
}

func (c *Config) validate(file string, root *yaml.Node) error {
	at := func(path ...any) string {
		if l := lineOf(root, path...); l > 0 {
			return file + ":" + strconv.Itoa(l)
		}
		return file
	}
	if len(c.Targets) > 0 && len(c.Environments) > 0 {
		return fmt.Errorf("%s: give targets or environments, not both: each environment is a target", at("environments"))
	}
	for _, p := range waves.Check(c.Environments, targetNameRE.MatchString, checkGlob) {
		return fmt.Errorf("%s: %s", at(append([]any{"environments"}, p.Path...)...), p.Msg)
	}
	seen := map[string]bool{}
	for i, t := range c.Targets {
		switch {
		case !targetNameRE.MatchString(t.Name):
			return fmt.Errorf("%s: target name %s: want lowercase letters, digits, '.', '_' or '-'", at("targets", i, "name"), clip.Quote(t.Name))
		case seen[t.Name]:
			return fmt.Errorf("%s: target %s defined twice", at("targets", i, "name"), clip.Quote(t.Name))
		case len(t.Paths) == 0:
			return fmt.Errorf("%s: target %s has no paths", at("targets", i), clip.Quote(t.Name))
		}
		seen[t.Name] = true
		for j, p := range t.Paths {
			if err := checkGlob(p); err != nil {
				return fmt.Errorf("%s: %w", at("targets", i, "paths", j), err)
			}
		}
	}
	for i, tr := range c.Track {
		ref, err := imageref.Parse(strings.TrimSpace(tr.Image))
		if err != nil || ref.Digest != "" {
			return fmt.Errorf("%s: track image %s: want a repository without tag or digest", at("track", i, "image"), clip.Quote(tr.Image))
		}
		if ref.Tag != "" {
			return fmt.Errorf("%s: track image %s: put the tag in the tag field", at("track", i, "image"), clip.Quote(tr.Image))
		}
		if tr.Tag == "" {
			return fmt.Errorf("%s: track entry for %s has no tag", at("track", i), tr.Image)
		}
		for j, p := range tr.Paths {
			if err := checkGlob(p); err != nil {
				return fmt.Errorf("%s: %w", at("track", i, "paths", j), err)
			}
		}
	}
	if c.BranchPrefix != "" && !validBranchPrefix(c.BranchPrefix) {
		return fmt.Errorf("%s: branchPrefix %s is not a valid start of a Git branch name", at("branchPrefix"), clip.Quote(c.BranchPrefix))
	}
	if (c.Author.Name == "") != (c.Author.Email == "") {
		return fmt.Errorf("%s: author needs both name and email", at("author"))
	}
	for _, f := range []struct{ key, v string }{{"name", c.Author.Name}, {"email", c.Author.Email}} {
		if i := strings.IndexAny(f.v, "\r\n\x00<>"); i >= 0 {
			return fmt.Errorf("%s: author %s %s holds %s: a line break, NUL or angle bracket would forge the commit's header", at("author", f.key), f.key, clip.Quote(f.v), clip.Quote(string(f.v[i])))
		}
	}
	switch c.Drift.Group {
	case "", GroupImage, GroupTarget, GroupAll:
	default:
		return fmt.Errorf("%s: drift group %s: want image, target or all", at("drift", "group"), clip.Quote(string(c.Drift.Group)))
	}
	if c.Drift.MinAge < 0 {
		return fmt.Errorf("%s: drift minAge must not be negative", at("drift", "minAge"))
	}
	if probs := c.Signatures.Validate(); len(probs) > 0 {
		return policyError(file, root, &probs[0])
	}
	for i, h := range c.Helm {
		if h.Chart == "" {
			return fmt.Errorf("%s: helm entry has no chart", at("helm", i))
		}
		switch h.Digest {
		case "key", "tag", "none":
		default:
			return fmt.Errorf("%s: helm chart %s: digest %s: want key, tag or none", at("helm", i, "digest"), h.Chart, clip.Quote(h.Digest))
		}
	}
	return nil
}

func (c *Config) defaults() {
	c.Environments = waves.Expand(c.Environments)
	c.Environments.Defaults()
	for _, e := range c.Environments {
		c.Targets = append(c.Targets, Target{Name: e.Name, Paths: e.Paths})
	}
	if len(c.Targets) == 0 {
		c.Targets = []Target{{Name: defaultTarget, Paths: []string{"**"}}}
	}
	if c.BranchPrefix == "" {
		c.BranchPrefix = defaultBranchPrefix
	}
	if c.Author.Name == "" {
		c.Author = Author{Name: DefaultAuthorName, Email: DefaultAuthorEmail}
	}
	if c.Drift.Group == "" {
		c.Drift.Group = GroupImage
	}
	for i := range c.Track {
		if ref, err := imageref.Parse(strings.TrimSpace(c.Track[i].Image)); err == nil {
			c.Track[i].Image = ref.Repository
		}
	}
}

// lineOf finds the line of a node in a decoded YAML document by a path of
// mapping keys (string) and sequence indexes (int); 0 when absent.
func lineOf(root *yaml.Node, path ...any) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, p := range path {
		switch k := p.(type) {
		case string:
			if n.Kind != yaml.MappingNode {
				return line
			}
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					next = n.Content[i+1]
					break
				}
			}
			if next == nil {
				return line
			}
			n = next
		case int:
			if n.Kind != yaml.SequenceNode || k >= len(n.Content) {
				return line
			}
			n = n.Content[k]
		}
		line = n.Line
	}
	return line
}
