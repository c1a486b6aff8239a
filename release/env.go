// Package release decides what moves where: the chain of environments a
// manifest repository declares, when a digest proven in one moves to the
// next, when a merged digest failed to prove and is rolled back and held,
// and the ledger that remembers it all. It is pure: facts come in (what
// Git pins, what the reconciler proved), actions go out (open a pull
// request, post a gate status, merge, roll back), and serve carries them
// out.
package release

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/globs"
	"pinbot.dev/pinbot/release/clusters"
	"pinbot.dev/pinbot/release/freeze"
)

// Environment is one stage of a release chain, as .pinbot.yaml declares
// it:
//
//	environments:
//	  - name: staging
//	    paths: ["envs/staging/**"]
//	    apps: [web-staging]     # the apps whose proof counts here
//	    soak: 10m               # proven this long here before it moves on
//	  - name: prod
//	    from: staging           # takes what staging proved
//	    paths: ["envs/prod/**"]
//	    apps: [web-prod]
//	    autoMerge: false        # pinbot merges its own pull request when the gate is green
//	    rollback: pr            # pr (default): open the rollback; auto: and merge it
//	    rollbackWindow: 1h      # failures after this long are reported, not rolled back
//	    readyTimeout: 5m        # proven within this after a merge, or it failed
//	    freeze:
//	      - {start: "0 18 * * 5", duration: 62h, timeZone: Europe/Berlin}
//	  - name: dr
//	    from: staging           # another installation's: not declared here
//	    requireAttestation: true
//	    attestationKeys: [keys/pinbot-staging.pub]
//	    upstreamSoak: 1h        # the attestation must say this long
type Environment struct {
	// Name names the environment and its promotion branches.
	Name string `yaml:"name" json:"name"`
	// From is the environment whose proof a digest needs before it moves
	// here; none for the first ones, which CI promotes into.
	From string `yaml:"from" json:"from,omitempty"`
	// Paths are the environment's files: slash globs relative to the
	// repository root.
	Paths []string `yaml:"paths" json:"paths"`
	// Apps are the apps (pinbot's own or verify-only Argo CD and Flux
	// apps, by name in serve's config) whose proof counts here.
	Apps []string `yaml:"apps" json:"apps"`
	// Soak is how long a digest must have been proven here, without a
	// break, before it moves to the environments that come from here.
	Soak time.Duration `yaml:"soak" json:"soak,omitempty"`
	// AutoMerge merges pinbot's promotion pull request into this
	// environment once its gate is green and Gitea lets it (approvals,
	// required checks); it never bypasses branch protection.
	AutoMerge bool `yaml:"autoMerge" json:"autoMerge,omitempty"`
	// Rollback says what pinbot does when a merged digest fails to prove.
	Rollback RollbackMode `yaml:"rollback" json:"rollback,omitempty"`
	// RollbackWindow bounds how long after a merge a failure is rolled
	// back; later ones are reported. Default 1h.
	RollbackWindow time.Duration `yaml:"rollbackWindow" json:"rollbackWindow,omitempty"`
	// ReadyTimeout is how long after a merge the digest has to be proven
	// (every replica Verified, Ready and healthy) before it counts as
	// failed. Default 5m.
	ReadyTimeout time.Duration `yaml:"readyTimeout" json:"readyTimeout,omitempty"`
	// Freeze lists the windows in which pinbot opens, updates and merges
	// nothing for this environment.
	Freeze []freeze.Window `yaml:"freeze" json:"freeze,omitempty"`
	// RequireAttestation admits a digest only with pinbot's signed
	// attestation that it was proven running in From, for From's soak:
	// besides the ledger's proof when From is declared in this chain,
	// instead of it when From is not (another installation's
	// environment, whose pinbot attests).
	RequireAttestation bool `yaml:"requireAttestation" json:"requireAttestation,omitempty"`
	// AttestationKeys are the cosign public keys (PEM files, paths in the
	// repository) one of which must have signed the attestation.
	AttestationKeys []string `yaml:"attestationKeys" json:"attestationKeys,omitempty"`
	// UpstreamSoak is how long the attestation must say the digest was
	// proven in From when From is not declared here; a declared From's
	// own soak counts otherwise.
	UpstreamSoak time.Duration `yaml:"upstreamSoak" json:"upstreamSoak,omitempty"`
	// Together lists groups of images that move here as one: an image
	// by its repository, or by the last segment of its path ("web" for
	// gitea.example/acme/web). A group is proposed once every member is
	// proven in From, in one pull request whose gate waits for them all;
	// when one fails here, every member merged with it is rolled back to
	// the digest proven before and held.
	Together [][]string `yaml:"together" json:"together,omitempty"`
	// Waves roll the environment out in steps over its clusters, each a
	// promotion of its own (package release/waves): give them in place
	// of the environment's paths and apps.
	Waves []Wave `yaml:"waves" json:"waves,omitempty"`
	// RollbackEarlierWaves rolls back, when a wave fails, the waves
	// before it that run the failed digest too; by default only the
	// failed wave is rolled back and the earlier ones keep it.
	RollbackEarlierWaves bool `yaml:"rollbackEarlierWaves" json:"rollbackEarlierWaves,omitempty"`
	// Of and Wave name the environment and wave an expanded wave is
	// (waves.Expand), and Placement its clusters; empty for an
	// environment without waves.
	Of        string             `yaml:"-" json:"of,omitempty"`
	Wave      string             `yaml:"-" json:"wave,omitempty"`
	Placement clusters.Placement `yaml:"-" json:"placement,omitzero"`
}

// Wave is one step of an environment's rollout: its own files (a
// cluster's overlay or values), the apps that prove it there, and how
// long it soaks before the next wave's promotion may merge.
type Wave struct {
	// Name names the wave; its environment is ENV.NAME.
	Name string `yaml:"name" json:"name"`
	// Paths are the wave's files: slash globs no other wave's overlap.
	Paths []string `yaml:"paths" json:"paths"`
	// Apps are the apps, one or more per cluster, whose proof counts in
	// the wave.
	Apps []string `yaml:"apps" json:"apps"`
	// Soak is how long the wave must have proven a digest before the
	// next wave's gate turns green; the last wave's defaults to the
	// environment's.
	Soak time.Duration `yaml:"soak" json:"soak,omitempty"`
	// Placement names the wave's clusters; with it, the wave's apps
	// default to the environment's, and the wave is proven cluster by
	// cluster.
	clusters.Placement `yaml:",inline"`
}

// RollbackMode is what pinbot does with a failed proof.
type RollbackMode string

// Rollback modes.
const (
	// RollbackPR opens the rollback pull request for a reviewer.
	RollbackPR RollbackMode = "pr"
	// RollbackAuto opens it and merges it (as autoMerge does).
	RollbackAuto RollbackMode = "auto"
)

// Defaults of an Environment.
const (
	defaultRollbackWindow = time.Hour
	defaultReadyTimeout   = 5 * time.Minute
)

// Chain is the environments of a repository, in the order declared: an
// environment's From is declared before it.
type Chain []Environment

// Get returns the environment name.
func (c Chain) Get(name string) (*Environment, bool) {
	for i := range c {
		if c[i].Name == name {
			return &c[i], true
		}
	}
	return nil, false
}

// Admission is the admission of digest of image into env, with env's
// upstream and the upstream's soak; ok is false when env is not in c.
func (c Chain) Admission(env, image, digest string) (a Admission, ok bool) {
	e, ok := c.Get(env)
	if !ok {
		return Admission{}, false
	}
	a = Admission{Env: env, Upstream: e.From, Image: image, Digest: digest, RequireAttestation: e.RequireAttestation}
	if up, ok := c.Get(e.From); ok {
		a.Soak = up.Soak
	} else if e.From != "" {
		a.External, a.Soak = true, e.UpstreamSoak
	}
	return a, true
}

// Roots are the environments that come from none: where CI promotes.
func (c Chain) Roots() []string {
	var out []string
	for _, e := range c {
		if e.From == "" {
			out = append(out, e.Name)
		}
	}
	return out
}

// Next are the environments that come straight from name.
func (c Chain) Next(name string) []string {
	var out []string
	for _, e := range c {
		if e.From == name {
			out = append(out, e.Name)
		}
	}
	return out
}

// Below is name and every environment that comes from it, directly or
// not: where a digest that failed in name is held.
func (c Chain) Below(name string) []string {
	out := []string{name}
	for i := 0; i < len(out); i++ {
		out = append(out, c.Next(out[i])...)
	}
	return out
}

// Problem is one invalid field of an environment: Index into the chain,
// Key the field (empty for the entry as a whole).
type Problem struct {
	Index int
	Key   string
	Msg   string
}

// UnknownApps are the apps the chain names that known does not, as
// "environment/app": an environment whose apps none runs proves nothing,
// so nothing moves onward from it.
func (c Chain) UnknownApps(known func(app string) bool) []string {
	var out []string
	for _, e := range c {
		for _, a := range e.Apps {
			if !known(a) {
				out = append(out, e.Name+"/"+a)
			}
		}
	}
	return out
}

// Validate checks the chain: unique names, From naming an environment
// declared before (or another installation's, whose attestation is
// required), paths that no two environments share, non-negative
// durations, known rollback modes and freeze windows that parse.
func (c Chain) Validate(validName func(string) bool, checkGlob func(string) error) []Problem {
	var out []Problem
	add := func(i int, key, format string, args ...any) {
		out = append(out, Problem{Index: i, Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	for i, e := range c {
		switch {
		case !validName(e.Name):
			add(i, "name", "environment name %q: want lowercase letters, digits, '.', '_' or '-'", e.Name)
		case slices.ContainsFunc(c[:i], func(p Environment) bool { return p.Name == e.Name }):
			add(i, "name", "environment %q defined twice", e.Name)
		}
		declared := slices.ContainsFunc(c[:i], func(p Environment) bool { return p.Name == e.From })
		if e.From != "" && !declared && !e.RequireAttestation {
			add(i, "from", "environment %q comes from %q, which is not declared before it (or set requireAttestation to take another installation's attestation of %q)", e.Name, e.From, e.From)
		}
		switch {
		case e.RequireAttestation && e.From == "":
			add(i, "requireAttestation", "environment %q requires an attestation but comes from no environment: name it in from", e.Name)
		case e.RequireAttestation && len(e.AttestationKeys) == 0:
			add(i, "attestationKeys", "environment %q requires an attestation: name the cosign public keys that sign it in attestationKeys", e.Name)
		case !e.RequireAttestation && (len(e.AttestationKeys) > 0 || e.UpstreamSoak != 0):
			add(i, "requireAttestation", "environment %q names attestationKeys or upstreamSoak without requireAttestation: true", e.Name)
		case e.UpstreamSoak != 0 && declared:
			add(i, "upstreamSoak", "environment %q comes from %q, declared here: its own soak counts, not upstreamSoak", e.Name, e.From)
		}
		if len(e.Paths) == 0 {
			add(i, "", "environment %q has no paths", e.Name)
		}
		for _, p := range e.Paths {
			if err := checkGlob(p); err != nil {
				add(i, "paths", "%s", err)
				continue
			}
			// One file, one environment: a promotion into one must never
			// rewrite another's files past its proof and holds.
			for _, o := range c[:i] {
				for _, q := range o.Paths {
					if checkGlob(q) == nil && globs.Overlap(p, q) {
						add(i, "paths", "environment %q's path %q overlaps environment %q's %q: a file may belong to one environment only", e.Name, p, o.Name, q)
					}
				}
			}
		}
		if e.From != "" && declared && len(c.appsOf(e.From)) == 0 {
			add(i, "from", "environment %q comes from %q, which names no apps to prove a digest", e.Name, e.From)
		}
		for key, d := range map[string]time.Duration{"soak": e.Soak, "rollbackWindow": e.RollbackWindow, "readyTimeout": e.ReadyTimeout, "upstreamSoak": e.UpstreamSoak} {
			if d < 0 {
				add(i, key, "%s must not be negative", key)
			}
		}
		switch e.Rollback {
		case "", RollbackPR, RollbackAuto:
		default:
			add(i, "rollback", "rollback %q: want pr or auto", e.Rollback)
		}
		for _, f := range e.Freeze {
			if err := f.Check(); err != nil {
				add(i, "freeze", "%s", err)
			}
		}
		seen := map[string]bool{}
		for _, g := range e.Together {
			if len(g) < 2 {
				add(i, "together", "environment %q: a group of images needs two or more, not %q", e.Name, g)
			}
			for _, m := range g {
				switch {
				case m == "" || strings.ContainsAny(m, " \t@"):
					add(i, "together", "environment %q: group member %q: want an image repository, or the last segment of its path", e.Name, m)
				case seen[m]:
					add(i, "together", "environment %q: %q is in two groups: an image moves with one group only", e.Name, m)
				}
				seen[m] = true
			}
		}
	}
	return out
}

// Group is a group of images that move into an environment as one
// (Environment.Together): its name, and its members as the ledger names
// them.
type Group struct {
	Name    string
	Members []string
}

// groupOf returns image's group in e among images (the repositories the
// step sees), if it has one.
func (e *Environment) groupOf(image string, images []string) (Group, bool) {
	for _, g := range e.Together {
		if slices.ContainsFunc(g, func(m string) bool { return names(m, image) }) {
			return resolve(g, images), true
		}
	}
	return Group{}, false
}

// resolve is group g of Together among images: every image a member
// names, each once, sorted.
func resolve(g []string, images []string) Group {
	out := Group{Name: strings.Join(g, "+")}
	for _, im := range images {
		if slices.ContainsFunc(g, func(m string) bool { return names(m, im) }) {
			out.Members = append(out.Members, im)
		}
	}
	slices.Sort(out.Members)
	out.Members = slices.Compact(out.Members)
	return out
}

// names reports whether member, as Together spells it, names image.
func names(member, image string) bool {
	return member == image || path.Base(image) == member && !strings.Contains(member, "/")
}

func (c Chain) appsOf(name string) []string {
	if e, ok := c.Get(name); ok {
		return e.Apps
	}
	return nil
}

// Defaults fills the environments' defaults.
func (c Chain) Defaults() {
	for i := range c {
		if c[i].Rollback == "" {
			c[i].Rollback = RollbackPR
		}
		if c[i].RollbackWindow == 0 {
			c[i].RollbackWindow = defaultRollbackWindow
		}
		if c[i].ReadyTimeout == 0 {
			c[i].ReadyTimeout = defaultReadyTimeout
		}
	}
}
