package serve

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/robfig/cron/v3"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/serve/notify"
	"pinbot.dev/pinbot/serve/signin"
)

// Config is the file `pinbot serve` runs from: the reconciler's config
// (interval, state namespace, forge, apps) and serve's own promote
// section. Every reconciler command reads the same file.
type Config struct {
	config.Config `yaml:",inline"`
	// Promote lists the manifest repositories serve promotes into on its
	// own: on a drift schedule, and when Gitea says an image was pushed.
	Promote []Target `yaml:"promote"`
	// Notify lists where serve sends what it proves and decides: JSON
	// webhooks signed with HMAC-SHA256, or Slack-compatible incoming
	// webhooks, each selecting events by reason and environment.
	Notify []notify.Target `yaml:"notify"`
	// Attest, when set, makes serve sign a "proven running" attestation
	// each time a digest is proven in an environment of a release chain,
	// and again when its soak completes, and attach it to the image
	// (package trust/attest).
	Attest *Attest `yaml:"attest"`
	// Admission, when set, serves a validating admission webhook that
	// holds the cluster to the release chain: a Pod or workload in an
	// environment's namespaces may run only digests the chain admits
	// (release.AdmitPod, the Pod rule).
	Admission *Admission `yaml:"admission"`
	// Dashboard signs people in to the dashboard (package serve/signin).
	Dashboard signin.Settings `yaml:"dashboard"`
}

// Target is one manifest repository that serve promotes into on its own:
// on a drift schedule, and when Gitea says one of Images was pushed.
type Target struct {
	// Repo is the manifest repository on the forge, as OWNER/NAME.
	Repo string `yaml:"repo"`
	// Drift is a cron schedule (five fields, or a descriptor such as
	// @hourly) on which the repository's tracked tags are checked for a
	// new digest; empty for none.
	Drift string `yaml:"drift"`
	// Images are repositories (no tag or digest) whose pushes are promoted
	// into Repo.
	Images []string `yaml:"images"`

	line int // line of the entry in the config file
}

// Line is the entry's line in the config file, 0 when unknown.
func (t *Target) Line() int { return t.line }

// Load reads, strictly decodes, validates and defaults the config at file
// (see config.Load). Errors name file:line.
func Load(file string) (*Config, error) { return config.LoadWith(file, Parse) }

// Parse decodes, validates and defaults a config held in memory; file only
// names it in errors.
func Parse(file string, data []byte) (*Config, error) {
	c := &Config{}
	root, err := config.Decode(file, data, c)
	if err != nil {
		return nil, err
	}
	for i, n := range config.ListNodes(root, "promote") {
		if i < len(c.Promote) {
			c.Promote[i].line = n.Line
		}
	}
	for i, n := range config.ListNodes(root, "notify") {
		if i < len(c.Notify) {
			c.Notify[i].SetLine(n.Line)
		}
	}
	var problems []string
	for i := range c.Promote {
		t := &c.Promote[i]
		for _, msg := range t.problems() {
			problems = append(problems, fmt.Sprintf("%s:%d: promote %s: %s", file, t.line, clip.Quote(t.Repo), msg))
		}
	}
	names := map[string]bool{}
	for i := range c.Notify {
		n := &c.Notify[i]
		msgs := n.Problems()
		if names[n.Name] {
			msgs = append(msgs, "name: another notify entry has it")
		}
		names[n.Name] = true
		for _, msg := range msgs {
			problems = append(problems, fmt.Sprintf("%s:%d: notify %s: %s", file, n.Line(), clip.Quote(n.Name), msg))
		}
		n.Resolve(filepath.Dir(file))
	}
	if c.Attest != nil {
		if c.Attest.KeyFile == "" {
			problems = append(problems, fmt.Sprintf("%s: attest.keyFile: required: the private key the attestations are signed with", file))
		}
		if err := c.Attest.Format.Check(); err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: attest.%s", file, config.KeyLine(root, "attest", "format"), err))
		}
		c.Attest.resolve(filepath.Dir(file))
	}
	if c.Admission != nil {
		for _, msg := range c.Admission.problems() {
			problems = append(problems, fmt.Sprintf("%s: %s", file, msg))
		}
		c.Admission.resolve(filepath.Dir(file))
	}
	for _, msg := range c.Dashboard.Problems(filepath.Dir(file)) {
		problems = append(problems, fmt.Sprintf("%s: %s", file, msg))
	}
	err = c.Complete(file, root)
	if len(problems) > 0 {
		if err != nil {
			problems = append([]string{err.Error()}, problems...)
		}
		return nil, fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// problems lists what is wrong with one promote entry.
func (t *Target) problems() []string {
	var out []string
	if owner, name, ok := strings.Cut(t.Repo, "/"); !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		out = append(out, fmt.Sprintf("repo %s: want OWNER/NAME of a repository on the forge", clip.Quote(t.Repo)))
	}
	if t.Drift != "" {
		if _, err := cron.ParseStandard(t.Drift); err != nil {
			out = append(out, fmt.Sprintf("drift %s: %s", clip.Quote(t.Drift), err))
		}
	}
	for _, img := range t.Images {
		if _, err := imageref.ParseRepository(img); err != nil {
			out = append(out, fmt.Sprintf("images: %s", err))
		}
	}
	if t.Drift == "" && len(t.Images) == 0 {
		out = append(out, "want drift, images or both")
	}
	return out
}

// Targets returns the promote entries, in config order, whose images list
// names image (compared normalised, case-insensitively).
func (c *Config) Targets(image string) []Target {
	want, err := imageref.ParseRepository(image)
	if err != nil {
		return nil
	}
	want = strings.ToLower(want)
	var out []Target
	for _, t := range c.Promote {
		for _, img := range t.Images {
			if got, err := imageref.ParseRepository(img); err == nil && strings.ToLower(got) == want {
				out = append(out, t)
				break
			}
		}
	}
	return out
}
