package deployer

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Flux's API groups and the kinds pinbot reads.
const (
	KustomizeGroup    = "kustomize.toolkit.fluxcd.io"
	KustomizationKind = "Kustomization"
	SourceGroup       = "source.toolkit.fluxcd.io"
	GitRepositoryKind = "GitRepository"
	// KustomizationAPIVersion and GitRepositoryAPIVersion are the versions
	// pinbot reads; other versions of the groups decode too.
	KustomizationAPIVersion = KustomizeGroup + "/v1"
	GitRepositoryAPIVersion = SourceGroup + "/v1"
)

// Kustomization is the part of a Flux Kustomization
// (kustomize.toolkit.fluxcd.io/v1) pinbot reads.
type Kustomization struct {
	Meta
	Spec   KustomizationSpec   `json:"spec"`
	Status KustomizationStatus `json:"status"`
}

// KustomizationSpec is the part of spec pinbot reads.
type KustomizationSpec struct {
	// Path in the source; "" is its root.
	Path      string    `json:"path,omitempty"`
	SourceRef SourceRef `json:"sourceRef"`
	// TargetNamespace, when set, is the namespace of every namespaced
	// object the Kustomization applies.
	TargetNamespace string `json:"targetNamespace,omitempty"`
	Suspend         bool   `json:"suspend,omitempty"`
	// Images, Patches, PostBuild, NamePrefix, NameSuffix, Components and
	// KubeConfig are read only to refuse what pinbot cannot render or
	// reach as Flux does.
	Images     []any          `json:"images,omitempty"`
	Patches    []any          `json:"patches,omitempty"`
	PostBuild  map[string]any `json:"postBuild,omitempty"`
	NamePrefix string         `json:"namePrefix,omitempty"`
	NameSuffix string         `json:"nameSuffix,omitempty"`
	Components []string       `json:"components,omitempty"`
	KubeConfig map[string]any `json:"kubeConfig,omitempty"`
}

// SourceRef is spec.sourceRef.
type SourceRef struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	// Namespace defaults to the Kustomization's.
	Namespace string `json:"namespace,omitempty"`
}

// KustomizationStatus is the part of status pinbot reads.
type KustomizationStatus struct {
	ObservedGeneration    int64       `json:"observedGeneration,omitempty"`
	LastAppliedRevision   string      `json:"lastAppliedRevision,omitempty"`
	LastAttemptedRevision string      `json:"lastAttemptedRevision,omitempty"`
	Inventory             *Inventory  `json:"inventory,omitempty"`
	Conditions            []Condition `json:"conditions,omitempty"`
}

// Inventory is status.inventory: what the Kustomization applied.
type Inventory struct {
	Entries []InventoryEntry `json:"entries"`
}

// InventoryEntry is one applied object: ID in the form
// "<namespace>_<name>_<group>_<kind>" and its API version.
type InventoryEntry struct {
	ID      string `json:"id"`
	Version string `json:"v"`
}

// Condition is one entry of status.conditions, as metav1.Condition.
type Condition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
}

// GitRepository is the part of a Flux GitRepository
// (source.toolkit.fluxcd.io/v1) pinbot reads.
type GitRepository struct {
	Meta
	Spec GitRepositorySpec `json:"spec"`
}

// GitRepositorySpec is the part of spec pinbot reads.
type GitRepositorySpec struct {
	URL string            `json:"url"`
	Ref *GitRepositoryRef `json:"ref,omitempty"`
	// Include pulls other repositories' files into the artifact; pinbot
	// does not follow them.
	Include []any `json:"include,omitempty"`
}

// GitRepositoryRef is spec.ref. Flux checks out Commit if set, else Name,
// else SemVer, else Tag, else Branch, and "master" when all are empty.
type GitRepositoryRef struct {
	Branch string `json:"branch,omitempty"`
	Tag    string `json:"tag,omitempty"`
	SemVer string `json:"semver,omitempty"`
	Name   string `json:"name,omitempty"`
	Commit string `json:"commit,omitempty"`
}

// DecodeKustomization reads a Flux Kustomization from JSON.
func DecodeKustomization(data []byte) (*Kustomization, error) {
	k := &Kustomization{}
	if err := decode(data, KustomizeGroup, KustomizationKind, &k.Meta, k); err != nil {
		return nil, err
	}
	return k, nil
}

// KustomizationFrom reads a Flux Kustomization from an object the API
// server returned.
func KustomizationFrom(u *unstructured.Unstructured) (*Kustomization, error) {
	k := &Kustomization{}
	if err := fromUnstructured(u, KustomizeGroup, KustomizationKind, &k.Meta, k); err != nil {
		return nil, err
	}
	return k, nil
}

// DecodeGitRepository reads a Flux GitRepository from JSON.
func DecodeGitRepository(data []byte) (*GitRepository, error) {
	r := &GitRepository{}
	if err := decode(data, SourceGroup, GitRepositoryKind, &r.Meta, r); err != nil {
		return nil, err
	}
	return r, nil
}

// GitRepositoryFrom reads a Flux GitRepository from an object the API
// server returned.
func GitRepositoryFrom(u *unstructured.Unstructured) (*GitRepository, error) {
	r := &GitRepository{}
	if err := fromUnstructured(u, SourceGroup, GitRepositoryKind, &r.Meta, r); err != nil {
		return nil, err
	}
	return r, nil
}

// GitRepository returns the namespace and name of the GitRepository the
// Kustomization follows, for the caller to read; any other kind of source
// is a *FieldError.
func (k *Kustomization) GitRepository() (namespace, name string, err error) {
	ref := k.Spec.SourceRef
	if ref.Kind != GitRepositoryKind {
		return "", "", &FieldError{Object: k.Name(), Field: "spec.sourceRef.kind",
			Reason: "pinbot follows a GitRepository only, not a " + quoteOrEmpty(ref.Kind)}
	}
	if ref.Name == "" {
		return "", "", &FieldError{Object: k.Name(), Field: "spec.sourceRef.name", Reason: "empty"}
	}
	namespace = ref.Namespace
	if namespace == "" {
		namespace = k.Metadata.Namespace
	}
	return namespace, ref.Name, nil
}

func quoteOrEmpty(s string) string {
	if s == "" {
		return "source with no kind"
	}
	return s
}
