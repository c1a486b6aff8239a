package deployer

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Argo CD's API group and the kind pinbot reads.
const (
	ArgoCDGroup       = "argoproj.io"
	ApplicationKind   = "Application"
	ArgoCDAPIVersion  = ArgoCDGroup + "/v1alpha1"
	argoInClusterURL  = "https://kubernetes.default.svc"
	argoInClusterName = "in-cluster"
)

// Argo CD operation phases (status.operationState.phase).
const (
	PhaseRunning     = "Running"
	PhaseTerminating = "Terminating"
	PhaseSucceeded   = "Succeeded"
	PhaseFailed      = "Failed"
	PhaseError       = "Error"
)

// Application is the part of an Argo CD Application (argoproj.io/v1alpha1)
// pinbot reads.
type Application struct {
	Meta
	// Operation is set while a sync has been requested and not yet taken
	// up by the controller; pinbot only checks that it is there.
	Operation map[string]any    `json:"operation,omitempty"`
	Spec      ApplicationSpec   `json:"spec"`
	Status    ApplicationStatus `json:"status"`
}

// ApplicationSpec is the part of spec pinbot reads.
type ApplicationSpec struct {
	Source      *ApplicationSource     `json:"source,omitempty"`
	Sources     []ApplicationSource    `json:"sources,omitempty"`
	Destination ApplicationDestination `json:"destination"`
	// SourceHydrator makes Argo CD deploy a hydrated branch it writes
	// itself; pinbot does not follow it.
	SourceHydrator map[string]any `json:"sourceHydrator,omitempty"`
}

// ApplicationSource is one source of an Application.
type ApplicationSource struct {
	RepoURL        string                 `json:"repoURL"`
	Path           string                 `json:"path,omitempty"`
	TargetRevision string                 `json:"targetRevision,omitempty"`
	Helm           *ApplicationSourceHelm `json:"helm,omitempty"`
	// Chart names a chart of a Helm repository instead of a Git path.
	Chart string `json:"chart,omitempty"`
	// Ref names a source whose files other sources' value files use.
	Ref  string `json:"ref,omitempty"`
	Name string `json:"name,omitempty"`
	// Kustomize, Plugin and Directory are read only to refuse what pinbot
	// cannot render as Argo CD does.
	Kustomize map[string]any `json:"kustomize,omitempty"`
	Plugin    map[string]any `json:"plugin,omitempty"`
	Directory map[string]any `json:"directory,omitempty"`
}

// ApplicationSourceHelm is spec.source.helm.
type ApplicationSourceHelm struct {
	ReleaseName string   `json:"releaseName,omitempty"`
	ValueFiles  []string `json:"valueFiles,omitempty"`
	// Values is a YAML document; ValuesObject, when set, replaces it.
	Values       string          `json:"values,omitempty"`
	ValuesObject map[string]any  `json:"valuesObject,omitempty"`
	Parameters   []HelmParameter `json:"parameters,omitempty"`
	// FileParameters (--set-file) are refused: pinbot does not render them.
	FileParameters          []map[string]any `json:"fileParameters,omitempty"`
	Namespace               string           `json:"namespace,omitempty"`
	KubeVersion             string           `json:"kubeVersion,omitempty"`
	APIVersions             []string         `json:"apiVersions,omitempty"`
	IgnoreMissingValueFiles bool             `json:"ignoreMissingValueFiles,omitempty"`
	SkipCrds                bool             `json:"skipCrds,omitempty"`
	SkipTests               bool             `json:"skipTests,omitempty"`
}

// HelmParameter is one entry of spec.source.helm.parameters.
type HelmParameter struct {
	Name        string `json:"name,omitempty"`
	Value       string `json:"value,omitempty"`
	ForceString bool   `json:"forceString,omitempty"`
}

// ApplicationDestination is spec.destination.
type ApplicationDestination struct {
	Server    string `json:"server,omitempty"`
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// InCluster reports whether the destination is the cluster Argo CD runs
// in ("https://kubernetes.default.svc" or the name "in-cluster"), the one
// whose Pods pinbot reads next to it.
func (d ApplicationDestination) InCluster() bool {
	return d.Server == argoInClusterURL || d.Server == "" && d.Name == argoInClusterName
}

// ApplicationStatus is the part of status pinbot reads.
type ApplicationStatus struct {
	Resources      []ResourceStatus       `json:"resources,omitempty"`
	Sync           SyncStatus             `json:"sync,omitempty"`
	Health         AppHealthStatus        `json:"health,omitempty"`
	History        []RevisionHistory      `json:"history,omitempty"`
	Conditions     []ApplicationCondition `json:"conditions,omitempty"`
	ReconciledAt   *time.Time             `json:"reconciledAt,omitempty"`
	OperationState *OperationState        `json:"operationState,omitempty"`
}

// ResourceStatus is one entry of status.resources.
type ResourceStatus struct {
	Group           string           `json:"group,omitempty"`
	Version         string           `json:"version,omitempty"`
	Kind            string           `json:"kind,omitempty"`
	Namespace       string           `json:"namespace,omitempty"`
	Name            string           `json:"name,omitempty"`
	Status          string           `json:"status,omitempty"`
	Health          *AppHealthStatus `json:"health,omitempty"`
	Hook            bool             `json:"hook,omitempty"`
	RequiresPruning bool             `json:"requiresPruning,omitempty"`
}

// SyncStatus is status.sync: Synced or OutOfSync against a revision.
type SyncStatus struct {
	Status    string   `json:"status,omitempty"`
	Revision  string   `json:"revision,omitempty"`
	Revisions []string `json:"revisions,omitempty"`
}

// AppHealthStatus is status.health: Healthy, Progressing, Degraded,
// Suspended, Missing or Unknown.
type AppHealthStatus struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
}

// RevisionHistory is one entry of status.history: a successful sync.
type RevisionHistory struct {
	ID         int64      `json:"id"`
	Revision   string     `json:"revision,omitempty"`
	Revisions  []string   `json:"revisions,omitempty"`
	DeployedAt *time.Time `json:"deployedAt,omitempty"`
}

// ApplicationCondition is one entry of status.conditions.
type ApplicationCondition struct {
	Type    string `json:"type"`
	Message string `json:"message,omitempty"`
}

// OperationState is status.operationState: the last or current operation.
type OperationState struct {
	Phase      string               `json:"phase"`
	Message    string               `json:"message,omitempty"`
	SyncResult *SyncOperationResult `json:"syncResult,omitempty"`
	StartedAt  *time.Time           `json:"startedAt,omitempty"`
	FinishedAt *time.Time           `json:"finishedAt,omitempty"`
}

// SyncOperationResult is status.operationState.syncResult.
type SyncOperationResult struct {
	Revision  string   `json:"revision,omitempty"`
	Revisions []string `json:"revisions,omitempty"`
}

// DecodeApplication reads an Argo CD Application from JSON.
func DecodeApplication(data []byte) (*Application, error) {
	a := &Application{}
	if err := decode(data, ArgoCDGroup, ApplicationKind, &a.Meta, a); err != nil {
		return nil, err
	}
	return a, nil
}

// ApplicationFrom reads an Argo CD Application from an object the API
// server returned.
func ApplicationFrom(u *unstructured.Unstructured) (*Application, error) {
	a := &Application{}
	if err := fromUnstructured(u, ArgoCDGroup, ApplicationKind, &a.Meta, a); err != nil {
		return nil, err
	}
	return a, nil
}
