// Package schema generates the JSON Schemas of pinbot's two config files
// from their Go types, for editors (`# yaml-language-server: $schema=`)
// and for docs/schema. Unknown keys are not allowed, as the loaders
// refuse them.
package schema

import (
	"encoding/json"
	"path"
	"reflect"
	"time"

	"github.com/invopop/jsonschema"

	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/serve"
)

// Files are the schemas docs/schema holds, by file name.
var Files = map[string]func() ([]byte, error){
	"pinbot-repository.schema.json": Repository,
	"pinbot-config.schema.json":     Config,
}

// Repository is the schema of .pinbot.yaml, a manifest repository's
// config.
func Repository() ([]byte, error) {
	return generate(&promote.Config{}, "https://pinbot.dev/schema/pinbot-repository.schema.json",
		"pinbot .pinbot.yaml: a manifest repository's targets, environments, tracking, drift and signature policy")
}

// Config is the schema of the reconciler's (pinbot serve's) config.
func Config() ([]byte, error) {
	return generate(&serve.Config{}, "https://pinbot.dev/schema/pinbot-config.schema.json",
		"pinbot serve and reconciler config: the apps, the forge, promote entries and the signature policy")
}

func generate(v any, id, title string) ([]byte, error) {
	r := &jsonschema.Reflector{
		FieldNameTag:               "yaml",
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
	s := r.Reflect(v)
	s.ID = jsonschema.ID(id)
	s.Title = title
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// durations are written as Go duration strings ("60s", "30m").
func durations(t reflect.Type) *jsonschema.Schema {
	if t == reflect.TypeFor[time.Duration]() || t == reflect.TypeFor[config.Duration]() {
		return &jsonschema.Schema{Type: "string", Pattern: `^-?([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`, Description: "a Go duration such as 60s, 30m or 1h30m"}
	}
	return nil
}
