package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	invopop "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/trust/proven"
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

// TestReferencePages: each config file's reference page has a row for
// every key its schema allows, and every link inside it lands on a
// section of the page.
func TestReferencePages(t *testing.T) {
	for page, gen := range map[string]func() (*invopop.Schema, error){
		"pinbot-config.md": Config, "pinbot-repository.md": Repository,
	} {
		t.Run(page, func(t *testing.T) {
			b, err := Files[page]()
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			s, err := gen()
			if err != nil {
				t.Fatal(err)
			}
			rows := 0
			for name, def := range s.Definitions {
				if !strings.Contains(text, "\n## "+name+"\n") {
					t.Errorf("no section for %s", name)
				}
				if def.Properties == nil {
					continue
				}
				for p := def.Properties.Oldest(); p != nil; p = p.Next() {
					rows++
					if !strings.Contains(text, "| `"+p.Key+"` |") {
						t.Errorf("%s: no row for key %s", name, p.Key)
					}
					if p.Value.Description == "" {
						t.Errorf("%s.%s has no doc comment to explain it", name, p.Key)
					}
				}
			}
			if rows < 10 {
				t.Errorf("%d keys in the schema; the reflection lost them", rows)
			}
			headings := map[string]bool{}
			for _, l := range strings.Split(text, "\n") {
				if h, ok := strings.CutPrefix(l, "## "); ok {
					headings[anchor(h)] = true
				}
			}
			for _, m := range regexp.MustCompile(`\]\(#([^)]+)\)`).FindAllStringSubmatch(text, -1) {
				if !headings[m[1]] {
					t.Errorf("link #%s lands on no section", m[1])
				}
			}
		})
	}
}

// TestPredicateSchemaJudgesAttestations: what serve writes as the proven
// running predicate passes its schema; a predicate with an unknown key
// or a number for a duration fails.
func TestPredicateSchemaJudgesAttestations(t *testing.T) {
	s := compile(t, "proven-running.v1.schema.json")
	since := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	p := proven.Predicate{Environment: "staging", Repository: "acme/manifests", Image: "gitea.example/acme/web", Digest: "sha256:" + strings.Repeat("a", 64),
		Stage: proven.StageSoaked, ProvenSince: since, ProvenFor: proven.Duration(25 * time.Hour), Soak: proven.Duration(24 * time.Hour),
		Clusters: []string{"in-cluster"}, Apps: []string{"web-staging"}, Pods: []proven.Pod{{Namespace: "staging", Name: "web-1", Container: "app"}},
		Rules: proven.Rules, Pinbot: "v0.4.0", AttestedAt: since}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(instance(t, string(b))); err != nil {
		t.Errorf("a predicate serve writes fails its schema: %v", err)
	}
	for _, bad := range []string{
		strings.Replace(string(b), `"stage"`, `"stagee"`, 1),
		strings.Replace(string(b), `"provenFor":"25h0m0s"`, `"provenFor":90000`, 1),
	} {
		if err := s.Validate(instance(t, bad)); err == nil {
			t.Errorf("the schema passes a bad predicate:\n%s", bad)
		}
	}
}
