package output

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/diff"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/prune"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

func TestWriteDiff(t *testing.T) {
	web := object.Ref{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	for _, tc := range []struct {
		name string
		d    reconciler.Diff
		want string
	}{
		{"in sync", reconciler.Diff{App: "shop", Commit: "0123456789abcdef", Sync: status.Synced},
			"shop at 0123456789ab: Synced: in sync\n"},
		{"out of sync, missing and orphaned", reconciler.Diff{App: "shop", Commit: "0123456789abcdef", Sync: status.OutOfSync,
			Fields:   []diff.Field{{Object: web, Path: "spec.replicas", Git: int64(3), Live: int64(1)}},
			Missing:  []object.Ref{{Kind: "ConfigMap", Namespace: "shop", Name: "new"}},
			Orphaned: []object.Ref{{Kind: "ConfigMap", Namespace: "shop", Name: "old"}}},
			"shop at 0123456789ab: OutOfSync: 1 field out of sync, 1 missing, 1 orphaned\n" +
				"Deployment shop/web: spec.replicas git=3 live=1\n" +
				"ConfigMap shop/new: missing (in Git, not in the cluster)\n" +
				"ConfigMap shop/old: orphaned (in the cluster, no longer in Git)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := Diff(&b, false, &tc.d); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteStatusesNamesFieldsOutOfSyncAndOrphans(t *testing.T) {
	web := object.Ref{Group: "apps", Kind: "Deployment", Namespace: "web", Name: "web"}
	st := &status.App{
		App:      "web",
		Commit:   "0123456789abcdef",
		Sync:     status.OutOfSync,
		Health:   verdict.Healthy,
		Drift:    []diff.Field{{Object: web, Path: "spec.replicas", Pointer: "/spec/replicas", Git: 3, Live: 1}},
		Orphaned: []object.Ref{{Kind: "ConfigMap", Namespace: "web", Name: "old"}},
	}
	var b strings.Builder
	if err := Statuses(&b, []*status.App{st}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")[2:] // after the table
	want := []string{
		"web: field out of sync: Deployment web/web: spec.replicas git=3 live=1",
		"web: orphaned (in the cluster, no longer in Git): ConfigMap web/old",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("status text (-want +got):\n%s", diff)
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
	if err := Plan(&b, false, plan); err != nil {
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
