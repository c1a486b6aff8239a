package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/diff"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/prune"
)

func TestSyncFlagErrors(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "pinbot.yaml")
	if err := os.WriteFile(cfg, []byte("apps:\n  - {name: web, repo: 'http://127.0.0.1:1/o/r.git', namespace: web}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"sync", "web", "--config", cfg, "--dry-run", "--wait", "1m"}, "flag --wait: a dry run applies nothing to wait for"},
		{[]string{"sync", "web", "--config", cfg, "--prune=maybe"}, `invalid argument "maybe" for "--prune"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, exitUsage, tc.stderr)
			}
		})
	}
}

func TestWritePlan(t *testing.T) {
	ref := func(kind, name string) object.Ref {
		group := ""
		switch kind {
		case "Job":
			group = "batch"
		case "Deployment":
			group = "apps"
		}
		return object.Ref{Group: group, Kind: kind, Namespace: "web", Name: name}
	}
	plan := &reconciler.SyncPlan{
		App: "web", Commit: "0123456789abcdef",
		Waves: []reconciler.PlannedWave{
			{Phase: "PreSync", Wave: 0, Objects: []reconciler.PlannedObject{{Object: ref("Job", "seed"), Action: reconciler.ActionReplace, Note: "not checked: the hook's previous run is deleted first"}}},
			{Wave: -1, Objects: []reconciler.PlannedObject{{Object: ref("Job", "migrate"), Action: reconciler.ActionCreate}}},
			{Wave: 0, Objects: []reconciler.PlannedObject{
				{Object: ref("ConfigMap", "settings"), Action: reconciler.ActionUnchanged},
				{Object: ref("ConfigMap", "bad"), Action: reconciler.ActionUpdate, Error: "ConfigMap \"bad\" is invalid"},
			}},
		},
		Heal: []diff.Field{{Object: ref("Deployment", "web"), Path: "spec.replicas", Git: 3, Live: 1}},
		Orphans: prune.Orphans{
			Delete: []object.Ref{ref("ConfigMap", "old")},
			Keep:   []prune.Kept{{Object: ref("ConfigMap", "keep"), Reason: `annotation pinbot.dev/prune: "false"`}},
		},
	}
	var b bytes.Buffer
	if err := writePlan(&b, &globals{output: "text"}, plan); err != nil {
		t.Fatal(err)
	}
	want := `web at 0123456789ab: dry run, nothing changed
PreSync wave 0
  replace   Job web/seed: not checked: the hook's previous run is deleted first
wave -1
  create    Job web/migrate
wave 0
  unchanged ConfigMap web/settings
  update    ConfigMap web/bad: REFUSED: ConfigMap "bad" is invalid
heal
  heal      Deployment web/web: spec.replicas git=3 live=1
orphaned (prune is off: kept; --prune would delete them)
  orphan    ConfigMap web/old
orphaned, never pruned
  keep      ConfigMap web/keep: annotation pinbot.dev/prune: "false"
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	if !plan.Failed() {
		t.Error("Failed() = false for a plan with a refused object")
	}
}
