package deploy

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"gopkg.in/yaml.v3"

	"pinbot.dev/pinbot/cmd/pinbot/cli"
	"pinbot.dev/pinbot/serve"
)

// TestShippedConfigParses holds the example overlay's reconciler config
// to the schema the reconciler enforces, so the two cannot drift apart.
func TestShippedConfigParses(t *testing.T) {
	const file = "overlays/example/reconciler.yaml"
	body, err := Manifests.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := serve.Parse("deploy/"+file, body)
	if err != nil {
		t.Fatalf("the shipped reconciler config does not parse: %s", err)
	}
	// The overlay's ConfigMap holds the file, under the key the
	// Deployment reads.
	var cm corev1.ConfigMap
	decode(t, build(t, "overlays/example"), "ConfigMap", "pinbot-config", &cm)
	if cm.Data["reconciler.yaml"] != string(body) {
		t.Errorf("the overlay's ConfigMap pinbot-config holds keys %v, want reconciler.yaml with %s", slices.Sorted(maps.Keys(cm.Data)), file)
	}
	if a := cfg.Apps[0]; a.SyncPolicy.Automated || a.SyncPolicy.SelfHeal || a.SyncPolicy.Prune {
		t.Errorf("the shipped config must keep the safe defaults, got %+v", a.SyncPolicy)
	}
	// The Lease, the trigger and the history live in the state namespace:
	// the namespace deploy/ creates and grants them in.
	if cfg.StateNamespace != stateNamespace {
		t.Errorf("stateNamespace %q, want %q, the namespace deploy/ creates", cfg.StateNamespace, stateNamespace)
	}
	if len(cfg.Promote) == 0 || cfg.Promote[0].Drift == "" || len(cfg.Promote[0].Images) == 0 {
		t.Errorf("the shipped config shows no promote: entry with drift and images, got %+v", cfg.Promote)
	}
}

// TestShippedArgsAreCommands checks that the container args in the
// manifests name real pinbot commands and flags.
func TestShippedArgsAreCommands(t *testing.T) {
	for _, tc := range []struct{ file, container, command string }{
		{"base/serve.yaml", "pinbot", "serve"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			args := containerArgs(t, tc.file, tc.container)
			root := cli.NewRootCommand()
			cmd, rest, err := root.Find(args)
			if err != nil || cmd == root {
				t.Fatalf("args %q name no pinbot command: %v", args, err)
			}
			if cmd.Name() != tc.command {
				t.Fatalf("args %q run pinbot %s, want pinbot %s", args, cmd.Name(), tc.command)
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("args %q: %s", args, err)
			}
		})
	}
}

// containerArgs returns the args of the named container anywhere in file.
func containerArgs(t *testing.T, file, name string) []string {
	t.Helper()
	b, err := Manifests.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	var found []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			var cname string
			var args *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				switch n.Content[i].Value {
				case "name":
					cname = n.Content[i+1].Value
				case "args":
					args = n.Content[i+1]
				}
			}
			if cname == name && args != nil {
				if err := args.Decode(&found); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&root)
	if found == nil {
		t.Fatalf("%s: no container %q with args", file, name)
	}
	return found
}
