package cli

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/reconciler/diff"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

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
	if err := writeStatuses(&b, []*status.App{st}); err != nil {
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
