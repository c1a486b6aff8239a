package deployer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestApplicationHealth(t *testing.T) {
	tests := []struct {
		name string
		// app is appended to appHeader.
		app  string
		want Health
	}{
		{
			name: "reconciled after the sync finished",
			app: `status:
  health: {status: Healthy}
  reconciledAt: "2026-01-01T10:00:05Z"
  operationState: {phase: Succeeded, finishedAt: "2026-01-01T10:00:04Z"}`,
			want: Health{Status: "Healthy", Counts: true, Healthy: true},
		},
		{
			name: "reconciled in the same second counts",
			app: `status:
  health: {status: Healthy}
  reconciledAt: "2026-01-01T10:00:04Z"
  operationState: {phase: Succeeded, finishedAt: "2026-01-01T10:00:04Z"}`,
			want: Health{Status: "Healthy", Counts: true, Healthy: true},
		},
		{
			name: "no operation ever: health counts",
			app: `status:
  health: {status: Healthy}
  reconciledAt: "2026-01-01T10:00:04Z"`,
			want: Health{Status: "Healthy", Counts: true, Healthy: true},
		},
		{
			name: "an operation still Running never counts",
			app: `status:
  health: {status: Healthy}
  reconciledAt: "2026-01-01T10:00:05Z"
  operationState: {phase: Running, startedAt: "2026-01-01T10:00:00Z", finishedAt: "2026-01-01T10:00:01Z"}`,
			want: Health{Status: "Healthy", Reason: "Argo CD's operation is still Running"},
		},
		{
			name: "an operation not finished",
			app: `status:
  health: {status: Healthy}
  reconciledAt: "2026-01-01T10:00:05Z"
  operationState: {phase: Succeeded}`,
			want: Health{Status: "Healthy", Reason: "Argo CD's operation has not finished"},
		},
		{
			name: "an operation requested",
			app: `operation: {sync: {revision: main}}
status:
  health: {status: Healthy}
  reconciledAt: "2026-01-01T10:00:05Z"
  operationState: {phase: Succeeded, finishedAt: "2026-01-01T10:00:04Z"}`,
			want: Health{Status: "Healthy", Reason: "Argo CD has an operation requested"},
		},
		{
			name: "health assessed before the sync finished (kargo #1411)",
			app: `status:
  health: {status: Healthy}
  reconciledAt: "2026-01-01T10:00:03Z"
  operationState: {phase: Succeeded, finishedAt: "2026-01-01T10:00:04Z"}`,
			want: Health{Status: "Healthy", Reason: "Argo CD has not reconciled the app since its last operation finished"},
		},
		{
			name: "never reconciled",
			app: `status:
  health: {status: Healthy}
  operationState: {phase: Failed, finishedAt: "2026-01-01T10:00:04Z"}`,
			want: Health{Status: "Healthy", Reason: "Argo CD has not reconciled the app since its last operation finished"},
		},
		{
			name: "degraded, trusted",
			app: `status:
  health: {status: Degraded, message: "Deployment web exceeded its progress deadline"}
  reconciledAt: "2026-01-01T10:00:05Z"
  operationState: {phase: Succeeded, finishedAt: "2026-01-01T10:00:04Z"}`,
			want: Health{Status: "Degraded", Counts: true, Reason: "Argo CD reports health Degraded: Deployment web exceeded its progress deadline"},
		},
		{
			name: "comparison error",
			app: `status:
  health: {status: Healthy}
  reconciledAt: "2026-01-01T10:00:05Z"
  conditions: [{type: ComparisonError, message: "rpc error"}]`,
			want: Health{Status: "Healthy", Counts: true, Reason: "Argo CD reports ComparisonError: rpc error"},
		},
		{
			name: "no health yet",
			app:  `status: {reconciledAt: "2026-01-01T10:00:05Z"}`,
			want: Health{Counts: true, Reason: "Argo CD reports health unknown"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := mustApp(t, appHeader+tc.app).Health()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Health (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKustomizationHealth(t *testing.T) {
	const header = `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: podinfo, namespace: flux-system, generation: 2}
`
	tests := []struct {
		name, ks string
		want     Health
	}{
		{
			name: "ready at the current generation",
			ks:   `status: {observedGeneration: 2, conditions: [{type: Ready, status: "True", observedGeneration: 2, message: "Applied revision: main@sha1:aa"}]}`,
			want: Health{Status: "Ready", Counts: true, Healthy: true},
		},
		{
			name: "ready, condition without observedGeneration",
			ks:   `status: {observedGeneration: 2, conditions: [{type: Ready, status: "True"}]}`,
			want: Health{Status: "Ready", Counts: true, Healthy: true},
		},
		{
			name: "an older generation observed",
			ks:   `status: {observedGeneration: 1, conditions: [{type: Ready, status: "True", observedGeneration: 1}]}`,
			want: Health{Status: "Ready", Reason: "Flux has not reconciled generation 2 yet"},
		},
		{
			name: "the Ready condition is stale",
			ks:   `status: {observedGeneration: 2, conditions: [{type: Ready, status: "True", observedGeneration: 1}]}`,
			want: Health{Status: "Ready", Reason: "Flux has not reconciled generation 2 yet"},
		},
		{
			name: "reconciling",
			ks:   `status: {observedGeneration: 2, conditions: [{type: Ready, status: Unknown, observedGeneration: 2}, {type: Reconciling, status: "True", message: "Running health checks"}]}`,
			want: Health{Status: "Unknown", Reason: "Flux is reconciling: Running health checks"},
		},
		{
			name: "failed",
			ks:   `status: {observedGeneration: 2, conditions: [{type: Ready, status: "False", observedGeneration: 2, message: "Deployment/web/api: timeout"}]}`,
			want: Health{Status: "NotReady", Counts: true, Reason: "Flux reports NotReady: Deployment/web/api: timeout"},
		},
		{
			name: "suspended",
			ks:   "spec: {suspend: true}\nstatus: {observedGeneration: 2, conditions: [{type: Ready, status: \"True\", observedGeneration: 2}]}",
			want: Health{Status: "Ready", Reason: "the Kustomization is suspended"},
		},
		{
			name: "no status",
			ks:   "",
			want: Health{Status: "Unknown", Reason: "Flux has not reconciled generation 2 yet"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := mustKustomization(t, header+tc.ks).Health()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Health (-want +got):\n%s", diff)
			}
		})
	}
}
