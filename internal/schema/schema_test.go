package schema

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// TestCommittedSchemasAreCurrent: docs/schema holds what the Go types
// say; change a config type, and make schemas writes it anew.
func TestCommittedSchemasAreCurrent(t *testing.T) {
	for name, gen := range Files {
		want, err := gen()
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("..", "..", "docs", "schema", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("docs/schema/%s is not what the config types generate (%v): run make schemas", name, err)
		}
	}
}

func compile(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	b, err := Files[name]()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func instance(t *testing.T, y string) any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestSchemasJudgeConfigs: the shipped config and a full .pinbot.yaml
// pass; a new user's typos (path:, reviewer:) and a number where a
// duration goes fail, as the loaders refuse them.
func TestSchemasJudgeConfigs(t *testing.T) {
	shippedBytes, err := os.ReadFile(filepath.Join("..", "..", "deploy", "overlays", "example", "reconciler.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	shipped := string(shippedBytes)
	repo := `targets:
  - name: prod
    paths: ["envs/prod/**"]
labels: [pinbot]
reviewers: [alice]
track:
  - {image: r.example/app, tag: main}
drift: {minAge: 30m, group: image}
helm:
  - {chart: podinfo, digest: tag}
signatures:
  - images: ["r.example/**"]
    keys: [keys/cosign.pub]
    attestations:
      - {predicateType: "https://slsa.dev/provenance/v1", ref: refs/heads/main}
`
	for _, tc := range []struct {
		schema, name, config, fail string
	}{
		{"pinbot-config.schema.json", "the shipped config", shipped, ""},
		{"pinbot-repository.schema.json", "a full .pinbot.yaml", repo, ""},
		{"pinbot-repository.schema.json", "typos", "targets:\n  - name: prod\n    path: [x]\nreviewer: [alice]\n", "additional properties"},
		{"pinbot-repository.schema.json", "a number for a duration", "drift: {minAge: 30}\n", "minAge"},
		{"pinbot-config.schema.json", "an unknown app key", "apps:\n  - {name: web, repo: x, namespace: web, prun: true}\n", "prun"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.config == "" {
				t.Fatal("no config")
			}
			err := compile(t, tc.schema).Validate(instance(t, tc.config))
			switch {
			case tc.fail == "" && err != nil:
				t.Errorf("invalid: %v", err)
			case tc.fail != "" && (err == nil || !strings.Contains(err.Error(), tc.fail)):
				t.Errorf("Validate = %v, want an error about %q", err, tc.fail)
			}
		})
	}
}
