package deployer

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

// fromYAML turns a YAML literal into the JSON the decoders read.
func fromYAML(t *testing.T, y string) []byte {
	t.Helper()
	j, err := sigsyaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("YAML literal: %s", err)
	}
	return j
}

func mustApp(t *testing.T, y string) *Application {
	t.Helper()
	a, err := DecodeApplication(fromYAML(t, y))
	if err != nil {
		t.Fatalf("DecodeApplication: %s", err)
	}
	return a
}

func mustKustomization(t *testing.T, y string) *Kustomization {
	t.Helper()
	k, err := DecodeKustomization(fromYAML(t, y))
	if err != nil {
		t.Fatalf("DecodeKustomization: %s", err)
	}
	return k
}

func mustGitRepository(t *testing.T, y string) *GitRepository {
	t.Helper()
	r, err := DecodeGitRepository(fromYAML(t, y))
	if err != nil {
		t.Fatalf("DecodeGitRepository: %s", err)
	}
	return r
}

func TestDecodeApplication(t *testing.T) {
	a := mustApp(t, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook, namespace: argocd, generation: 3}
spec:
  source:
    repoURL: https://git.example/team/guestbook.git
    path: charts/guestbook
    targetRevision: main
    helm:
      releaseName: gb
      valueFiles: [values-prod.yaml]
      valuesObject: {replicaCount: 3}
      parameters: [{name: image.tag, value: v2, forceString: true}]
  destination: {server: "https://kubernetes.default.svc", namespace: web}
status:
  reconciledAt: "2026-01-02T10:00:05Z"
  operationState:
    phase: Succeeded
    startedAt: "2026-01-02T10:00:00Z"
    finishedAt: "2026-01-02T10:00:04Z"
    syncResult: {revision: 0123456789abcdef0123456789abcdef01234567}
  history:
  - {id: 1, revision: "1111111111111111111111111111111111111111", deployedAt: "2026-01-01T09:00:00Z"}
  health: {status: Healthy}
  sync: {status: Synced, revision: 0123456789abcdef0123456789abcdef01234567}
  resources:
  - {group: apps, version: v1, kind: Deployment, namespace: web, name: guestbook, status: Synced, health: {status: Healthy}}
`)
	finished := time.Date(2026, 1, 2, 10, 0, 4, 0, time.UTC)
	want := &Application{
		Meta: Meta{APIVersion: "argoproj.io/v1alpha1", Kind: "Application", Metadata: ObjectMeta{Name: "guestbook", Namespace: "argocd", Generation: 3}},
		Spec: ApplicationSpec{
			Source: &ApplicationSource{
				RepoURL: "https://git.example/team/guestbook.git", Path: "charts/guestbook", TargetRevision: "main",
				Helm: &ApplicationSourceHelm{
					ReleaseName: "gb", ValueFiles: []string{"values-prod.yaml"},
					ValuesObject: map[string]any{"replicaCount": float64(3)},
					Parameters:   []HelmParameter{{Name: "image.tag", Value: "v2", ForceString: true}},
				},
			},
			Destination: ApplicationDestination{Server: "https://kubernetes.default.svc", Namespace: "web"},
		},
		Status: ApplicationStatus{
			ReconciledAt: ptr(time.Date(2026, 1, 2, 10, 0, 5, 0, time.UTC)),
			OperationState: &OperationState{
				Phase: "Succeeded", StartedAt: ptr(time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)), FinishedAt: &finished,
				SyncResult: &SyncOperationResult{Revision: "0123456789abcdef0123456789abcdef01234567"},
			},
			History:   []RevisionHistory{{ID: 1, Revision: "1111111111111111111111111111111111111111", DeployedAt: ptr(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))}},
			Health:    AppHealthStatus{Status: "Healthy"},
			Sync:      SyncStatus{Status: "Synced", Revision: "0123456789abcdef0123456789abcdef01234567"},
			Resources: []ResourceStatus{{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "guestbook", Status: "Synced", Health: &AppHealthStatus{Status: "Healthy"}}},
		},
	}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("DecodeApplication (-want +got):\n%s", diff)
	}
}

func ptr[T any](v T) *T { return &v }

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name   string
		decode func([]byte) error
		yaml   string
		// want are substrings of the error; field the DecodeError's Field.
		want  []string
		field string
	}{
		{
			name:   "type mismatch names object and field",
			decode: func(b []byte) error { _, err := DecodeApplication(b); return err },
			yaml: `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook, namespace: argocd}
spec: {source: {repoURL: x, path: 42}}`,
			want:  []string{"Application argocd/guestbook", "spec.source.path", "string"},
			field: "spec.source.path",
		},
		{
			name:   "a list where a map belongs",
			decode: func(b []byte) error { _, err := DecodeApplication(b); return err },
			yaml: `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook, namespace: argocd}
spec: {source: {repoURL: x, helm: {valuesObject: [1, 2]}}}`,
			want:  []string{"Application argocd/guestbook", "spec.source.helm.valuesObject"},
			field: "spec.source.helm.valuesObject",
		},
		{
			name:   "a bad timestamp",
			decode: func(b []byte) error { _, err := DecodeApplication(b); return err },
			yaml: `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook, namespace: argocd}
status: {reconciledAt: yesterday}`,
			want: []string{"Application argocd/guestbook", "yesterday"},
		},
		{
			name:   "wrong kind",
			decode: func(b []byte) error { _, err := DecodeApplication(b); return err },
			yaml: `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}`,
			want: []string{"Deployment default/web", "want kind Application of group argoproj.io"},
		},
		{
			name:   "Kustomization inventory entry",
			decode: func(b []byte) error { _, err := DecodeKustomization(b); return err },
			yaml: `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: podinfo, namespace: flux-system}
status: {inventory: {entries: [{id: 7, v: v1}]}}`,
			want:  []string{"Kustomization flux-system/podinfo", "status.inventory.entries.id"},
			field: "status.inventory.entries.id",
		},
		{
			name:   "GitRepository of the wrong group",
			decode: func(b []byte) error { _, err := DecodeGitRepository(b); return err },
			yaml: `apiVersion: example.com/v1
kind: GitRepository
metadata: {name: podinfo, namespace: flux-system}`,
			want: []string{"GitRepository flux-system/podinfo", "source.toolkit.fluxcd.io", `"example.com/v1"`},
		},
		{
			name:   "malformed metadata",
			decode: func(b []byte) error { _, err := DecodeKustomization(b); return err },
			yaml: `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: podinfo, namespace: [a]}`,
			want:  []string{"Kustomization podinfo", "metadata.namespace"},
			field: "metadata.namespace",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.decode(fromYAML(t, tc.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			if de.Field != tc.field {
				t.Errorf("Field = %q, want %q", de.Field, tc.field)
			}
		})
	}
}

func TestFromUnstructured(t *testing.T) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(fromYAML(t, `
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: podinfo, namespace: flux-system, generation: 2}
spec: {path: ./apps/podinfo, sourceRef: {kind: GitRepository, name: podinfo}}
status: {observedGeneration: 2, lastAppliedRevision: "main@sha1:0123456789abcdef0123456789abcdef01234567"}
`)); err != nil {
		t.Fatal(err)
	}
	k, err := KustomizationFrom(u)
	if err != nil {
		t.Fatalf("KustomizationFrom: %s", err)
	}
	want := &Kustomization{
		Meta:   Meta{APIVersion: KustomizationAPIVersion, Kind: "Kustomization", Metadata: ObjectMeta{Name: "podinfo", Namespace: "flux-system", Generation: 2}},
		Spec:   KustomizationSpec{Path: "./apps/podinfo", SourceRef: SourceRef{Kind: "GitRepository", Name: "podinfo"}},
		Status: KustomizationStatus{ObservedGeneration: 2, LastAppliedRevision: "main@sha1:0123456789abcdef0123456789abcdef01234567"},
	}
	if diff := cmp.Diff(want, k); diff != "" {
		t.Errorf("KustomizationFrom (-want +got):\n%s", diff)
	}
	if _, err := ApplicationFrom(u); err == nil || !strings.Contains(err.Error(), "Kustomization flux-system/podinfo") {
		t.Errorf("ApplicationFrom(a Kustomization) = %v, want an error naming it", err)
	}
	if _, err := GitRepositoryFrom(nil); err == nil {
		t.Error("GitRepositoryFrom(nil): no error")
	}
}
