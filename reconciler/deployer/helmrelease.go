package deployer

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Flux's Helm kinds pinbot reads.
const (
	HelmGroup          = "helm.toolkit.fluxcd.io"
	HelmReleaseKind    = "HelmRelease"
	HelmRepositoryKind = "HelmRepository"
	OCIRepositoryKind  = "OCIRepository"
)

// HelmRelease is the part of a Flux HelmRelease (helm.toolkit.fluxcd.io/v2)
// pinbot reads.
type HelmRelease struct {
	Meta
	Spec   HelmReleaseSpec   `json:"spec"`
	Status HelmReleaseStatus `json:"status"`
}

// HelmReleaseSpec is the part of spec pinbot reads.
type HelmReleaseSpec struct {
	// Chart is spec.chart: a chart of a HelmRepository, or a chart's
	// directory in a GitRepository, that source-controller packs into a
	// HelmChart.
	Chart *HelmChartTemplate `json:"chart,omitempty"`
	// ChartRef is spec.chartRef: an OCIRepository (or a HelmChart) that
	// holds the chart.
	ChartRef *SourceRef `json:"chartRef,omitempty"`
	// ReleaseName defaults to [TargetNamespace-]Name.
	ReleaseName     string         `json:"releaseName,omitempty"`
	TargetNamespace string         `json:"targetNamespace,omitempty"`
	Values          map[string]any `json:"values,omitempty"`
	ValuesFrom      []ValuesRef    `json:"valuesFrom,omitempty"`
	KubeConfig      map[string]any `json:"kubeConfig,omitempty"`
	// PostRenderers are read only to refuse them: pinbot does not apply
	// them after the render.
	PostRenderers []any `json:"postRenderers,omitempty"`
	Suspend       bool  `json:"suspend,omitempty"`
}

// HelmChartTemplate is spec.chart.
type HelmChartTemplate struct {
	Spec struct {
		// Chart is the chart's name in a HelmRepository, or its path in a
		// GitRepository.
		Chart string `json:"chart"`
		// Version is a version or a semver range; default "*".
		Version     string    `json:"version,omitempty"`
		SourceRef   SourceRef `json:"sourceRef"`
		ValuesFiles []string  `json:"valuesFiles,omitempty"`
		// IgnoreMissingValuesFiles skips ValuesFiles that do not exist.
		IgnoreMissingValuesFiles bool `json:"ignoreMissingValuesFiles,omitempty"`
	} `json:"spec"`
}

// ValuesRef is one entry of spec.valuesFrom.
type ValuesRef struct {
	// Kind is ConfigMap or Secret, in the HelmRelease's namespace.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// ValuesKey is the data key holding the values; default values.yaml.
	ValuesKey string `json:"valuesKey,omitempty"`
	// TargetPath, when set, puts the key's whole value at this path of
	// the values instead of merging it as YAML.
	TargetPath string `json:"targetPath,omitempty"`
	Optional   bool   `json:"optional,omitempty"`
}

// HelmReleaseStatus is the part of status pinbot reads.
type HelmReleaseStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// History holds the release's snapshots, newest first.
	History    []HelmSnapshot `json:"history,omitempty"`
	Conditions []Condition    `json:"conditions,omitempty"`
}

// HelmSnapshot is one entry of status.history: one Helm release revision.
type HelmSnapshot struct {
	Name         string `json:"name"`
	Namespace    string `json:"namespace"`
	Version      int    `json:"version"`
	Status       string `json:"status"`
	ChartName    string `json:"chartName"`
	ChartVersion string `json:"chartVersion"`
}

// HelmRepository is the part of a Flux HelmRepository pinbot reads.
type HelmRepository struct {
	Meta
	Spec struct {
		URL string `json:"url"`
		// Type is "oci" for an OCI registry, else an HTTP repository.
		Type string `json:"type,omitempty"`
		// SecretRef names a Secret of the repository's namespace with
		// username and password keys.
		SecretRef *struct {
			Name string `json:"name"`
		} `json:"secretRef,omitempty"`
	} `json:"spec"`
}

// OCIRepository is the part of a Flux OCIRepository pinbot reads.
type OCIRepository struct {
	Meta
	Spec struct {
		// URL is oci://host/path/chart.
		URL string `json:"url"`
		Ref *struct {
			Tag    string `json:"tag,omitempty"`
			SemVer string `json:"semver,omitempty"`
			Digest string `json:"digest,omitempty"`
		} `json:"ref,omitempty"`
	} `json:"spec"`
}

// HelmReleaseFrom reads a Flux HelmRelease from an object the API server
// returned.
func HelmReleaseFrom(u *unstructured.Unstructured) (*HelmRelease, error) {
	h := &HelmRelease{}
	if err := fromUnstructured(u, HelmGroup, HelmReleaseKind, &h.Meta, h); err != nil {
		return nil, err
	}
	return h, nil
}

// HelmRepositoryFrom reads a Flux HelmRepository.
func HelmRepositoryFrom(u *unstructured.Unstructured) (*HelmRepository, error) {
	r := &HelmRepository{}
	if err := fromUnstructured(u, SourceGroup, HelmRepositoryKind, &r.Meta, r); err != nil {
		return nil, err
	}
	return r, nil
}

// OCIRepositoryFrom reads a Flux OCIRepository.
func OCIRepositoryFrom(u *unstructured.Unstructured) (*OCIRepository, error) {
	r := &OCIRepository{}
	if err := fromUnstructured(u, SourceGroup, OCIRepositoryKind, &r.Meta, r); err != nil {
		return nil, err
	}
	return r, nil
}

// ChartSource returns the kind, namespace and name of the source object
// that holds the release's chart, for the caller to read: a
// HelmRepository or a GitRepository (spec.chart), or an OCIRepository
// (spec.chartRef). A Bucket or a HelmChart is a *FieldError naming the
// field.
func (h *HelmRelease) ChartSource() (kind, namespace, name string, err error) {
	fail := func(field, format string, args ...any) (string, string, string, error) {
		return "", "", "", &FieldError{Object: h.Name(), Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	var ref SourceRef
	field := "spec.chart.spec.sourceRef"
	switch {
	case h.Spec.Chart != nil && h.Spec.ChartRef != nil:
		return fail("spec.chartRef", "set next to spec.chart; Flux takes one")
	case h.Spec.Chart != nil:
		ref = h.Spec.Chart.Spec.SourceRef
		if ref.Kind != HelmRepositoryKind && ref.Kind != GitRepositoryKind {
			return fail(field+".kind", "pinbot renders charts of a HelmRepository or a GitRepository, not of a %s", quoteOrEmpty(ref.Kind))
		}
	case h.Spec.ChartRef != nil:
		ref, field = *h.Spec.ChartRef, "spec.chartRef"
		if ref.Kind != OCIRepositoryKind {
			return fail(field+".kind", "pinbot renders the chart of an OCIRepository, not of a %s", quoteOrEmpty(ref.Kind))
		}
	default:
		return fail("spec.chart", "the HelmRelease names no chart")
	}
	if ref.Name == "" {
		return fail(field+".name", "empty")
	}
	namespace = ref.Namespace
	if namespace == "" {
		namespace = h.Metadata.Namespace
	}
	return ref.Kind, namespace, ref.Name, nil
}

// Source returns what the HelmRelease renders, given the source object
// ChartSource named: a chart of a *HelmRepository or an *OCIRepository
// (Source.Chart), or the chart's directory in a *GitRepository at the
// ref it follows (Source.Path), with the release's name, namespace,
// values, valuesFrom and values files as helm-controller passes them to
// Helm.
func (h *HelmRelease) Source(src any) (Source, error) {
	obj := h.Name()
	fail := func(o, field, format string, args ...any) (Source, error) {
		return Source{}, &FieldError{Object: o, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if len(h.Spec.PostRenderers) > 0 {
		return fail(obj, "spec.postRenderers", "pinbot does not apply post-renderers after the render")
	}
	var chart Chart
	helm := &Helm{ReleaseName: h.releaseName(), Namespace: h.namespace(), Values: h.Spec.Values}
	var git *Source
	switch s := src.(type) {
	case *GitRepository:
		var err error
		if git, err = h.gitChart(s, helm); err != nil {
			return Source{}, err
		}
	case *HelmRepository:
		c := h.Spec.Chart.Spec
		if s.Spec.URL == "" {
			return fail(s.Name(), "spec.url", "empty")
		}
		if c.Chart == "" {
			return fail(obj, "spec.chart.spec.chart", "empty")
		}
		chart = Chart{RepoURL: s.Spec.URL, Name: c.Chart, Version: c.Version}
		if chart.Version == "" {
			chart.Version = "*"
		}
		if r := s.Spec.SecretRef; r != nil && r.Name != "" {
			chart.SecretRef = &SecretKey{Namespace: s.Metadata.Namespace, Name: r.Name}
		}
		if s.Spec.Type == "oci" && !strings.HasPrefix(chart.RepoURL, "oci://") {
			chart.RepoURL = "oci://" + strings.TrimPrefix(chart.RepoURL, "https://")
		}
		for i, f := range c.ValuesFiles {
			p, err := cleanPath(f)
			if err != nil || p == "" {
				return fail(obj, fmt.Sprintf("spec.chart.spec.valuesFiles[%d]", i), "%q: a file of the chart", f)
			}
			helm.ValueFiles = append(helm.ValueFiles, p)
		}
		helm.IgnoreMissingValueFiles = c.IgnoreMissingValuesFiles
	case *OCIRepository:
		u := strings.TrimSuffix(s.Spec.URL, "/")
		if !strings.HasPrefix(u, "oci://") {
			return fail(s.Name(), "spec.url", "%q: want oci://host/path", s.Spec.URL)
		}
		r := s.Spec.Ref
		if r == nil || r.Tag == "" || r.SemVer != "" || r.Digest != "" {
			return fail(s.Name(), "spec.ref", "pinbot renders the chart of an OCIRepository at a tag, not a semver range or a digest")
		}
		chart = Chart{RepoURL: path.Dir(u), Name: path.Base(u), Version: r.Tag}
		if strings.HasPrefix(chart.RepoURL, "oci:/") && !strings.HasPrefix(chart.RepoURL, "oci://") {
			chart.RepoURL = "oci://" + strings.TrimPrefix(chart.RepoURL, "oci:/")
		}
	default:
		return fail(obj, "spec.chart", "no chart source given")
	}
	for i, v := range h.Spec.ValuesFrom {
		if (v.Kind != "ConfigMap" && v.Kind != "Secret") || v.Name == "" {
			return fail(obj, fmt.Sprintf("spec.valuesFrom[%d]", i), "want {kind: ConfigMap or Secret, name}")
		}
	}
	helm.ValuesFrom, helm.ValuesNamespace = h.Spec.ValuesFrom, h.Metadata.Namespace
	cluster, err := kubeConfigCluster(obj, h.Metadata.Namespace, h.Spec.KubeConfig)
	if err != nil {
		return Source{}, err
	}
	if git != nil {
		git.Cluster, git.Helm = cluster, helm
		return *git, nil
	}
	return Source{
		Kind: Flux, Object: obj, RepoURL: chart.RepoURL, Namespace: h.namespace(), Index: -1,
		Cluster: cluster, Chart: &chart, Helm: helm,
	}, nil
}

// gitChart is the Source of a chart's directory in a GitRepository, and
// sets helm's values files: source-controller reads spec.chart.spec.chart
// and valuesFiles as paths from the repository's root.
func (h *HelmRelease) gitChart(repo *GitRepository, helm *Helm) (*Source, error) {
	obj, c := h.Name(), h.Spec.Chart.Spec
	fail := func(o, field, format string, args ...any) (*Source, error) {
		return nil, &FieldError{Object: o, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case len(repo.Spec.Include) > 0:
		return fail(repo.Name(), "spec.include", "pinbot does not follow included repositories")
	case repo.Spec.URL == "":
		return fail(repo.Name(), "spec.url", "empty")
	}
	dir, err := cleanPath(c.Chart)
	if err != nil || dir == "" {
		return fail(obj, "spec.chart.spec.chart", "%q: want the chart's directory in the GitRepository", c.Chart)
	}
	ref, err := fluxRef(repo)
	if err != nil {
		return nil, err
	}
	for i, f := range c.ValuesFiles {
		p, err := cleanPath(f)
		if err != nil || p == "" {
			return fail(obj, fmt.Sprintf("spec.chart.spec.valuesFiles[%d]", i), "%q: a file of the repository", f)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return fail(obj, fmt.Sprintf("spec.chart.spec.valuesFiles[%d]", i), "%q: %s", f, err)
		}
		helm.ValueFiles = append(helm.ValueFiles, filepath.ToSlash(rel))
	}
	helm.IgnoreMissingValueFiles = c.IgnoreMissingValuesFiles
	return &Source{Kind: Flux, Object: obj, RepoURL: repo.Spec.URL, Path: dir, Ref: ref, Namespace: h.namespace(), Index: -1}, nil
}

// releaseName is spec.releaseName, else [targetNamespace-]name.
func (h *HelmRelease) releaseName() string {
	switch {
	case h.Spec.ReleaseName != "":
		return h.Spec.ReleaseName
	case h.Spec.TargetNamespace != "":
		return h.Spec.TargetNamespace + "-" + h.Metadata.Name
	}
	return h.Metadata.Name
}

// namespace is where the release's namespaced objects go.
func (h *HelmRelease) namespace() string {
	if h.Spec.TargetNamespace != "" {
		return h.Spec.TargetNamespace
	}
	return h.Metadata.Namespace
}

// Deployed is the chart version of the newest release in
// status.history that Helm reports deployed. ErrNotDeployed (wrapped)
// when there is none. For a chart of a GitRepository it is
// Revision.Version, and Revision.Commit is the commit the version's build
// metadata abbreviates (source-controller's reconcileStrategy Revision
// appends the commit's first 12 digits: "0.1.0+1a2b3c4d5e6f"), or "" when
// it names none.
func (h *HelmRelease) Deployed() (Revision, error) {
	for _, s := range h.Status.History {
		if s.Status != "deployed" || s.ChartVersion == "" {
			continue
		}
		if c := h.Spec.Chart; c != nil && c.Spec.SourceRef.Kind == GitRepositoryKind {
			return Revision{Commit: versionCommit(s.ChartVersion), Version: s.ChartVersion}, nil
		}
		return Revision{Commit: s.ChartVersion}, nil
	}
	return Revision{}, fmt.Errorf("%s: no deployed release in status.history: %w", h.Name(), ErrNotDeployed)
}

// versionCommit is the abbreviated commit a chart version's build
// metadata ends with, lowercase; "" when there is none.
func versionCommit(version string) string {
	_, meta, ok := strings.Cut(version, "+")
	if !ok {
		return ""
	}
	if i := strings.LastIndex(meta, "."); i >= 0 {
		meta = meta[i+1:]
	}
	if meta = strings.ToLower(meta); !abbrevCommit.MatchString(meta) {
		return ""
	}
	return meta
}

// kubeConfigCluster is the remote cluster a Flux object's spec.kubeConfig
// names, nil for Flux's own. pinbot reads the kubeconfig Secret
// (secretRef); a configMapRef, which asks a cloud provider for
// credentials, it cannot follow.
func kubeConfigCluster(obj, namespace string, kc map[string]any) (*Cluster, error) {
	if kc == nil {
		return nil, nil
	}
	ref, _ := kc["secretRef"].(map[string]any)
	name, _ := ref["name"].(string)
	if name == "" {
		return nil, &FieldError{Object: obj, Field: "spec.kubeConfig", Reason: "pinbot reads a kubeconfig from spec.kubeConfig.secretRef; a provider's configMapRef it cannot follow"}
	}
	key, _ := ref["key"].(string)
	return &Cluster{KubeConfig: &SecretKey{Namespace: namespace, Name: name, Key: key}}, nil
}
