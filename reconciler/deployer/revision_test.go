package deployer

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	commitA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	commitB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	commitC = "cccccccccccccccccccccccccccccccccccccccc"
)

func TestApplicationDeployed(t *testing.T) {
	single := Source{Index: -1}
	tests := []struct {
		name   string
		status string
		source Source
		want   Revision
		// err is a substring of the error, "" for none.
		err string
	}{
		{
			name:   "succeeded sync",
			status: "operationState: {phase: Succeeded, finishedAt: \"2026-01-01T00:00:00Z\", syncResult: {revision: " + commitC + "}}\n  history: [{id: 1, revision: " + commitA + "}]",
			source: single,
			want:   Revision{Commit: commitC},
		},
		{
			name:   "failed sync: the newest history entry",
			status: "operationState: {phase: Failed, syncResult: {revision: " + commitC + "}}\n  history: [{id: 1, revision: " + commitA + "}, {id: 2, revision: " + commitB + "}]",
			source: single,
			want:   Revision{Commit: commitB},
		},
		{
			name:   "running sync: the newest history entry, by id not position",
			status: "operationState: {phase: Running, syncResult: {revision: " + commitC + "}}\n  history: [{id: 7, revision: " + commitB + "}, {id: 3, revision: " + commitA + "}]",
			source: single,
			want:   Revision{Commit: commitB},
		},
		{
			name:   "no operation state",
			status: "history: [{id: 1, revision: " + commitA + "}]",
			source: single,
			want:   Revision{Commit: commitA},
		},
		{
			name:   "uppercase revision",
			status: "operationState: {phase: Succeeded, syncResult: {revision: " + strings.ToUpper(commitA) + "}}",
			source: single,
			want:   Revision{Commit: commitA},
		},
		{
			name:   "multiple sources: the followed source's revision",
			status: "operationState: {phase: Succeeded, syncResult: {revisions: [" + commitA + ", " + commitB + "]}}",
			source: Source{Index: 1},
			want:   Revision{Commit: commitB},
		},
		{
			name:   "multiple sources, failed: history's revisions",
			status: "operationState: {phase: Error, syncResult: {revisions: [" + commitA + ", " + commitB + "]}}\n  history: [{id: 4, revisions: [" + commitC + ", " + commitA + "]}]",
			source: Source{Index: 0},
			want:   Revision{Commit: commitC},
		},
		{
			name:   "never synced",
			status: "operationState: {phase: Failed, syncResult: {revision: " + commitC + "}}",
			source: single,
			err:    "no successful sync",
		},
		{
			name:   "no status at all",
			status: "{}",
			source: single,
			err:    "no successful sync",
		},
		{
			name:   "a chart version, not a commit",
			status: "operationState: {phase: Succeeded, syncResult: {revision: 1.2.3}}",
			source: single,
			err:    `status.operationState.syncResult.revision: "1.2.3" is not a commit id`,
		},
		{
			name:   "a short history revision",
			status: "history: [{id: 1, revision: abc123}]",
			source: single,
			err:    `status.history[0].revision: "abc123"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := mustApp(t, appHeader+"status:\n  "+tc.status)
			got, err := a.Deployed(tc.source)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Deployed = %v, %v; want an error saying %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Deployed: %s", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Deployed (-want +got):\n%s", diff)
			}
		})
	}
	_, err := mustApp(t, appHeader).Deployed(single)
	if !errors.Is(err, ErrNotDeployed) {
		t.Errorf("Deployed of a new Application = %v, want ErrNotDeployed", err)
	}
}

func TestParseFluxRevision(t *testing.T) {
	tests := []struct {
		in   string
		want Revision
		err  bool
	}{
		{in: "main@sha1:" + commitA, want: Revision{Commit: commitA, Ref: "main"}},
		{in: "refs/heads/main@sha1:" + commitB, want: Revision{Commit: commitB, Ref: "refs/heads/main"}},
		{in: "v1.2.0@sha1:" + strings.ToUpper(commitC), want: Revision{Commit: commitC, Ref: "v1.2.0"}},
		{in: "sha1:" + commitA, want: Revision{Commit: commitA}},
		{in: "main@sha256:" + commitA + commitB[:24], want: Revision{Commit: commitA + commitB[:24], Ref: "main"}},
		{in: "main/" + commitA, want: Revision{Commit: commitA, Ref: "main"}},
		{in: "feature/x/" + commitB, want: Revision{Commit: commitB, Ref: "feature/x"}},
		{in: "main@sha1:abc", err: true},
		{in: "main@sha256:" + commitA, err: true},
		{in: "main@md5:" + commitA, err: true},
		{in: "@sha1:" + commitA, err: true},
		{in: commitA, err: true},
		{in: "latest@sha256:" + strings.Repeat("0", 63) + "g", err: true},
		{in: "main", err: true},
	}
	for _, tc := range tests {
		got, err := ParseFluxRevision(tc.in)
		if tc.err {
			if err == nil {
				t.Errorf("ParseFluxRevision(%q) = %+v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseFluxRevision(%q): %s", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseFluxRevision(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestKustomizationDeployed(t *testing.T) {
	k := mustKustomization(t, ksHeader+"status: {lastAppliedRevision: \"main@sha1:"+commitA+"\"}")
	got, err := k.Deployed()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Revision{Commit: commitA, Ref: "main"}, got); diff != "" {
		t.Errorf("Deployed (-want +got):\n%s", diff)
	}
	if !got.AtHead(commitA) || !got.AtHead(strings.ToUpper(commitA)) || got.AtHead(commitB) {
		t.Errorf("AtHead of %s: wrong", got.Commit)
	}
	if (Revision{}).AtHead("") {
		t.Error("an empty revision is at an empty head")
	}

	_, err = mustKustomization(t, ksHeader).Deployed()
	if !errors.Is(err, ErrNotDeployed) {
		t.Errorf("Deployed of a new Kustomization = %v, want ErrNotDeployed", err)
	}
	// Applied, its health checks running or failed: Flux records it
	// attempted only. A failed build or apply is not applied at all, nor
	// is a revision a new reconciliation only started on (Ready still
	// tells of the last).
	for _, tc := range []struct {
		name, conditions, want string
	}{
		{"health checks failed", `[{type: Ready, status: "False", reason: HealthCheckFailed}]`, commitB},
		{"health checks running", `[{type: Reconciling, status: "True", reason: Progressing}, {type: Healthy, status: Unknown, reason: Progressing, message: "Running health checks for revision main@sha1:` + commitB + ` with a timeout of 20s"}]`, commitB},
		{"a new reconciliation begun after a failed check", `[{type: Ready, status: "False", reason: HealthCheckFailed}, {type: Reconciling, status: "True", reason: Progressing}]`, commitA},
		{"the apply failed", `[{type: Ready, status: "False", reason: ReconciliationFailed}]`, commitA},
	} {
		k := mustKustomization(t, ksHeader+"status:\n  lastAppliedRevision: main@sha1:"+commitA+"\n  lastAttemptedRevision: main@sha1:"+commitB+"\n  conditions: "+tc.conditions+"\n")
		if got, err := k.Deployed(); err != nil || got.Commit != tc.want {
			t.Errorf("Deployed, %s = %v, %v; want %s", tc.name, got, err, tc.want)
		}
	}
	_, err = mustKustomization(t, ksHeader+"status: {lastAppliedRevision: main@sha1:xyz}").Deployed()
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "status.lastAppliedRevision" || fe.Object != "Kustomization flux-system/podinfo" {
		t.Errorf("Deployed of a malformed revision = %v, want a *FieldError naming status.lastAppliedRevision", err)
	}
}
