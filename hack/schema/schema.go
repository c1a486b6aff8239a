package main

import (
	stdjson "encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"time"

	"github.com/invopop/jsonschema"

	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/release/clusters"
	"pinbot.dev/pinbot/serve"
	"pinbot.dev/pinbot/trust/proven"
)

// Files are what docs/schema holds, by file name: each config file's
// schema, and its reference page (see Markdown).
var Files = map[string]func() ([]byte, error){
	"pinbot-repository.schema.json": jsonFile(Repository),
	"pinbot-config.schema.json":     jsonFile(Config),
	"pinbot-repository.md":          markdownFile(Repository, "`.pinbot.yaml` reference", repositoryIntro),
	"pinbot-config.md":              markdownFile(Config, "serve's config reference", configIntro),
	"proven-running.v1.schema.json": jsonFile(ProvenRunning),
}

const (
	repositoryIntro = "`.pinbot.yaml` sits at the root of a manifest repository and says where " +
		"`pinbot promote` and `pinbot drift` may pin (see [promote](../promote.md), " +
		"[drift](../drift.md) and [environments](../environments.md))."
	configIntro = "The file `pinbot serve` and every reconciler command read, from `--config` or " +
		"`$PINBOT_CONFIG` (see [reconciler](../reconciler.md) and [serve](../serve.md))."
)

// Repository is the schema of .pinbot.yaml, a manifest repository's
// config.
func Repository() (*jsonschema.Schema, error) {
	return generate(&promote.Config{}, "https://pinbot.dev/schema/pinbot-repository.schema.json",
		"pinbot .pinbot.yaml: a manifest repository's targets, environments, tracking, drift and signature policy")
}

// Config is the schema of the reconciler's (pinbot serve's) config.
func Config() (*jsonschema.Schema, error) {
	return generate(&serve.Config{}, "https://pinbot.dev/schema/pinbot-config.schema.json",
		"pinbot serve and reconciler config: the apps, the forge, promote entries and the signature policy")
}

// ProvenRunning is the schema of the predicate of pinbot's "proven
// running" attestation (proven.PredicateType).
func ProvenRunning() (*jsonschema.Schema, error) {
	return generateTagged(&proven.Predicate{}, "json", "https://pinbot.dev/schema/proven-running.v1.schema.json",
		"pinbot proven running attestation, predicate v1 ("+proven.PredicateType+")")
}

func jsonFile(gen func() (*jsonschema.Schema, error)) func() ([]byte, error) {
	return func() ([]byte, error) {
		s, err := gen()
		if err != nil {
			return nil, err
		}
		out, err := stdjson.MarshalIndent(s, "", "  ")
		if err != nil {
			return nil, err
		}
		return append(out, '\n'), nil
	}
}

func markdownFile(gen func() (*jsonschema.Schema, error), title, intro string) func() ([]byte, error) {
	return func() ([]byte, error) {
		s, err := gen()
		if err != nil {
			return nil, err
		}
		return Markdown(s, title, intro), nil
	}
}

// The packages whose doc comments describe the config types' fields.
var commented = []string{"promote", "release", "serve", "reconciler/config", "reconciler/deployer", "reconciler/ignore", "trust/policy", "trust/proven"}

func generate(v any, id, title string) (*jsonschema.Schema, error) {
	return generateTagged(v, "yaml", id, title)
}

// generateTagged is the schema of v, its field names from tag.
func generateTagged(v any, tag, id, title string) (*jsonschema.Schema, error) {
	r := &jsonschema.Reflector{
		FieldNameTag:               tag,
		RequiredFromJSONSchemaTags: true, // nothing is required by the Go types alone
		AllowAdditionalProperties:  false,
		Mapper:                     durations,
		// Qualified by package: two packages' types of one name (the
		// signature policy's Rule and an ignore Rule) are two definitions.
		Namer: func(t reflect.Type) string {
			if t.PkgPath() == "" {
				return t.Name()
			}
			return path.Base(t.PkgPath()) + "." + t.Name()
		},
	}
	root, wd, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	for _, dir := range commented {
		if err := addComments(r, root, wd, dir); err != nil {
			return nil, err
		}
	}
	s := r.Reflect(v)
	s.ID = jsonschema.ID(id)
	s.Title = title
	return s, nil
}

// durations are written as Go duration strings ("60s", "30m").
func durations(t reflect.Type) *jsonschema.Schema {
	if t == reflect.TypeFor[time.Duration]() || t == reflect.TypeFor[config.Duration]() || t == reflect.TypeFor[proven.Duration]() {
		return &jsonschema.Schema{Type: "string", Pattern: `^-?([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`, Description: "a Go duration such as 60s, 30m or 1h30m"}
	}
	if t == reflect.TypeFor[clusters.Share]() {
		return &jsonschema.Schema{OneOf: []*jsonschema.Schema{{Type: "integer", Minimum: "0"}, {Type: "string", Pattern: `^([0-9]|[1-9][0-9]|100)%$`}},
			Description: "a count, or a percentage such as 25%"}
	}
	return nil
}

// moduleRoot is the directory of pinbot's go.mod relative to the working
// directory, and the working directory relative to it: the comments are
// read from the source.
func moduleRoot() (root, wd string, err error) {
	abs, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	for dir := abs; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			root, err := filepath.Rel(abs, dir)
			if err != nil {
				return "", "", err
			}
			wd, err := filepath.Rel(dir, abs)
			return root, wd, err
		}
		if filepath.Dir(dir) == dir {
			return "", "", fmt.Errorf("reading the config types' comments: no go.mod above %s", abs)
		}
	}
}

// addComments reads the doc comments of the Go files under dir, a path
// below the module root; root is the module root relative to the working
// directory, and wd the working directory relative to the root.
func addComments(r *jsonschema.Reflector, root, wd, dir string) error {
	// AddGoComments names a package base + its directory as walked, so
	// base is the working directory's import path.
	base := path.Join(module, filepath.ToSlash(wd))
	if err := r.AddGoComments(base, filepath.Join(root, dir)); err != nil {
		return fmt.Errorf("reading the comments of %s: %w", dir, err)
	}
	return nil
}

const module = "pinbot.dev/pinbot"
