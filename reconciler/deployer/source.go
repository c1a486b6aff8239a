package deployer

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	sigsyaml "sigs.k8s.io/yaml"
)

// Kind names who deploys an app: the value of `source` in `verify -o
// json`.
type Kind string

// Deployers.
const (
	ArgoCD Kind = "argocd"
	Flux   Kind = "flux"
	// Pinbot is an app pinbot applies itself; this package decides nothing
	// for it.
	Pinbot Kind = "pinbot"
)

// Title is the deployer's name in prose: "Argo CD", "Flux" or "pinbot".
func (k Kind) Title() string {
	switch k {
	case ArgoCD:
		return "Argo CD"
	case Flux:
		return "Flux"
	}
	return string(k)
}

// Source is what an app deployed by Argo CD or Flux follows, read from the
// deployer's object: pinbot renders it at the head to learn what the Pods
// should run.
type Source struct {
	// Kind is the deployer.
	Kind Kind
	// Object names the deployer's object ("Application argocd/guestbook").
	Object string
	// RepoURL is the Git repository, as the deployer has it.
	RepoURL string
	// Path is the directory in the repository, slash-separated and
	// cleaned; "" is the root.
	Path string
	// Ref is what the deployer tracks.
	Ref GitRef
	// Helm is how Argo CD renders the path when it holds a Helm chart:
	// spec.source.helm, or its defaults (the Application's name as the
	// release, the destination namespace) when there is none. Nil for
	// Flux, which renders charts through a HelmRelease, not a
	// Kustomization.
	Helm *Helm
	// Namespace is the destination namespace: Argo CD's
	// spec.destination.namespace, Flux's spec.targetNamespace; "" when
	// the deployer sets none.
	Namespace string
	// Index is the position of the followed source in an Application's
	// spec.sources, whose revisions are lists in the same order; -1 for
	// spec.source and for Flux.
	Index int
	// Kustomize are the deployer's kustomize overrides, as the fields of a
	// kustomization.yaml (images, namePrefix, nameSuffix, namespace,
	// commonLabels, commonAnnotations, replicas, patches): Argo CD's
	// spec.source.kustomize, a Kustomization's spec.images, spec.patches,
	// spec.namePrefix and spec.nameSuffix. Nil for none.
	Kustomize map[string]any
	// Substitute is a Flux Kustomization's spec.postBuild: the variables
	// substituted into the build's objects. Nil for none.
	Substitute *Substitute
	// Cluster is where the deployer applies, when that is not the cluster
	// it runs in: an Argo CD destination's server or name, whose Argo CD
	// cluster Secret says how to reach it. Nil for the deployer's own.
	Cluster *Cluster
	// Chart is the chart of a Helm repository the source names in place
	// of a Git path (an Argo CD source's chart:); RepoURL is then the
	// Helm repository, Path and Ref are empty, and Helm says how the
	// chart renders. Nil for a Git source.
	Chart *Chart
}

// Chart is a chart of a Helm repository, at a version.
type Chart struct {
	// RepoURL is the Helm repository: an HTTP one, or an OCI registry
	// path (oci://, or no scheme as Argo CD writes it).
	RepoURL string
	// Name is the chart's name in it.
	Name string
	// Version is the targetRevision: a version, or for an HTTP
	// repository a semver range, whose newest version Argo CD deploys.
	Version string
	// SecretRef is a Flux HelmRepository's spec.secretRef: the Secret
	// whose username and password keys log in to the repository.
	SecretRef *SecretKey
	// ArgoCDNamespace holds Argo CD's repository Secrets (labelled
	// argocd.argoproj.io/secret-type: repository or repo-creds), one of
	// which may hold the repository's credentials.
	ArgoCDNamespace string
}

// Cluster names another cluster than the deployer's own: an Argo CD
// destination (Server or Name), or the kubeconfig Secret of a Flux
// Kustomization (KubeConfig).
type Cluster struct {
	// Server is the API server's URL; Name the cluster's name in Argo
	// CD. Either may be empty, not both, for Argo CD.
	Server, Name string
	// KubeConfig is Flux's spec.kubeConfig.secretRef, in the
	// Kustomization's namespace.
	KubeConfig *SecretKey
}

// Substitute is Flux's post-build substitution: Vars
// (spec.postBuild.substitute) over the data of From
// (spec.postBuild.substituteFrom), in the Kustomization's namespace.
type Substitute struct {
	Vars      map[string]string
	From      []VarsFrom
	Namespace string
}

// VarsFrom is one entry of spec.postBuild.substituteFrom.
type VarsFrom struct {
	// Kind is ConfigMap or Secret.
	Kind, Name string
	// Optional: a missing object adds no variables rather than failing.
	Optional bool
}

// SecretKey is a key of a Secret; an empty Key means Flux's defaults,
// "value" then "value.yaml".
type SecretKey struct {
	Namespace, Name, Key string
}

// String names the cluster for people: its name, else its server, else
// its kubeconfig Secret.
func (c *Cluster) String() string {
	switch {
	case c.Name != "":
		return c.Name
	case c.Server != "":
		return c.Server
	case c.KubeConfig != nil:
		return "kubeConfig " + c.KubeConfig.Namespace + "/" + c.KubeConfig.Name
	}
	return ""
}

// GitRef is the reference a deployer tracks. At most one of Branch, Tag,
// Name and Commit is set, except Revision alone for Argo CD.
type GitRef struct {
	// Branch is a branch name (Flux's spec.ref.branch, "master" when the
	// GitRepository names no reference).
	Branch string
	// Tag is a tag name (Flux's spec.ref.tag).
	Tag string
	// Name is a full reference such as "refs/heads/main" (Flux's
	// spec.ref.name).
	Name string
	// Commit pins one commit, lowercase: Flux's spec.ref.commit, or an
	// Argo CD targetRevision of 40 or 64 hex digits.
	Commit string
	// Revision is Argo CD's targetRevision when it names a branch or a
	// tag, resolved against the repository as Argo CD does; "HEAD" (also
	// for an empty targetRevision) is the remote's default branch.
	Revision string
}

// String reads "branch main", "tag v1", "commit 3f2a…", "ref refs/heads/x"
// or "revision HEAD".
func (r GitRef) String() string {
	switch {
	case r.Commit != "":
		return "commit " + r.Commit
	case r.Name != "":
		return "ref " + r.Name
	case r.Tag != "":
		return "tag " + r.Tag
	case r.Branch != "":
		return "branch " + r.Branch
	}
	return "revision " + r.Revision
}

// Helm is how Argo CD renders a chart, from spec.source.helm, in the terms
// of pinbot's renderer (render.Helm).
type Helm struct {
	// ReleaseName is .Release.Name: helm.releaseName, else the
	// Application's name.
	ReleaseName string
	// Namespace is .Release.Namespace: helm.namespace, else the
	// destination namespace.
	Namespace string
	// ValueFiles are relative to the chart directory; later ones win.
	ValueFiles []string
	// Values override the value files: helm.valuesObject when set, else
	// helm.values parsed (Argo CD uses one or the other, never both).
	Values map[string]any
	// Parameters override everything else: the --set ones first, then the
	// --set-string ones (forceString), as Helm applies them, each name once
	// with its last value, as Argo CD keeps them in a map.
	Parameters []HelmParameter
	// IgnoreMissingValueFiles skips value files that do not exist.
	IgnoreMissingValueFiles bool
	// SkipCRDs leaves out the chart's crds/ directory.
	SkipCRDs bool
	// KubeVersion and APIVersions, when set, replace what the cluster's
	// discovery says.
	KubeVersion string
	APIVersions []string
	// ValuesFrom are a Flux HelmRelease's spec.valuesFrom, in
	// ValuesNamespace: merged in order under Values, as helm-controller
	// does.
	ValuesFrom      []ValuesRef
	ValuesNamespace string
}

var hexCommit = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// Source returns what the Application follows: spec.source, or the one
// source of spec.sources that has a path or a chart (the others may only
// lend value files through ref, when they are the same repository at the
// same revision). A chart of a Helm repository is Source.Chart. Sources
// pinbot cannot render as Argo CD does are a *FieldError naming the
// field: a config management plugin, Jsonnet, kustomize fields other than
// the overrides, Helm file parameters or value files of another source,
// a source hydrator. A destination other than Argo CD's own cluster is
// Source.Cluster.
func (a *Application) Source() (Source, error) {
	obj := a.Name()
	fail := func(field, format string, args ...any) (Source, error) {
		return Source{}, &FieldError{Object: obj, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if a.Spec.SourceHydrator != nil {
		return fail("spec.sourceHydrator", "Argo CD deploys the branch it hydrates; pinbot does not follow it")
	}
	var cluster *Cluster
	if d := a.Spec.Destination; !d.InCluster() {
		if d.Server == "" && d.Name == "" {
			return fail("spec.destination", "names no server and no name")
		}
		cluster = &Cluster{Server: d.Server, Name: d.Name}
	}
	src, field, index := a.Spec.Source, "spec.source", -1
	if len(a.Spec.Sources) > 0 {
		var withPath []int
		for i, s := range a.Spec.Sources {
			if s.Path != "" || s.Chart != "" || s.Ref == "" {
				withPath = append(withPath, i)
			}
		}
		if len(withPath) != 1 {
			return fail("spec.sources", "pinbot follows one source with a path; found %d", len(withPath))
		}
		index = withPath[0]
		src, field = &a.Spec.Sources[index], fmt.Sprintf("spec.sources[%d]", index)
	}
	if src == nil {
		return fail("spec.source", "the Application has no source")
	}
	switch {
	case src.RepoURL == "":
		return fail(field+".repoURL", "empty")
	case src.Chart != "":
		return a.chartSource(src, field, index, cluster)
	case src.Plugin != nil:
		return fail(field+".plugin", "pinbot cannot render a config management plugin")
	case src.Directory != nil && src.Directory["jsonnet"] != nil:
		return fail(field+".directory.jsonnet", "pinbot cannot render Jsonnet")
	}
	p, err := cleanPath(src.Path)
	if err != nil {
		return fail(field+".path", "%s", err)
	}
	out := Source{
		Kind:      ArgoCD,
		Object:    obj,
		RepoURL:   src.RepoURL,
		Path:      p,
		Ref:       argoRef(src.TargetRevision),
		Namespace: a.Spec.Destination.Namespace,
		Index:     index,
		Cluster:   cluster,
	}
	if len(src.Kustomize) > 0 {
		if out.Kustomize, err = argoOverrides(obj, field+".kustomize", src.Kustomize); err != nil {
			return Source{}, err
		}
	}
	h := src.Helm
	if h == nil {
		h = &ApplicationSourceHelm{}
	}
	if out.Helm, err = a.helm(h, field+".helm", refFiles(a.Spec.Sources, src, p)); err != nil {
		return Source{}, err
	}
	return out, nil
}

// chartSource is Source for a source that names a chart of a Helm
// repository.
func (a *Application) chartSource(src *ApplicationSource, field string, index int, cluster *Cluster) (Source, error) {
	obj := a.Name()
	if strings.TrimSpace(src.TargetRevision) == "" {
		return Source{}, &FieldError{Object: obj, Field: field + ".targetRevision", Reason: fmt.Sprintf("names no version of chart %q", src.Chart)}
	}
	out := Source{
		Kind: ArgoCD, Object: obj, RepoURL: src.RepoURL, Namespace: a.Spec.Destination.Namespace, Index: index, Cluster: cluster,
		Chart: &Chart{RepoURL: src.RepoURL, Name: src.Chart, Version: strings.TrimSpace(src.TargetRevision), ArgoCDNamespace: a.Metadata.Namespace},
	}
	h := src.Helm
	if h == nil {
		h = &ApplicationSourceHelm{}
	}
	var err error
	if out.Helm, err = a.helm(h, field+".helm", refFiles(a.Spec.Sources, src, "")); err != nil {
		return Source{}, err
	}
	return out, nil
}

// argoRef classifies a targetRevision.
func argoRef(rev string) GitRef {
	switch {
	case rev == "" || rev == "HEAD":
		return GitRef{Revision: "HEAD"}
	case hexCommit.MatchString(strings.ToLower(rev)):
		return GitRef{Commit: strings.ToLower(rev)}
	}
	return GitRef{Revision: rev}
}

// refFiles resolves a value file "$name/rest" of src, whose chart is at
// chartPath, to a path relative to the chart: when the source with ref
// name is src's own repository at src's revision (a mono-repository's
// values beside its charts). A ref source of another repository or
// revision is an error, naming it: pinbot renders one repository at one
// commit, the one it verifies against.
func refFiles(sources []ApplicationSource, src *ApplicationSource, chartPath string) func(string) (string, error) {
	return func(f string) (string, error) {
		name, rest, _ := strings.Cut(strings.TrimPrefix(f, "$"), "/")
		for i := range sources {
			ref := &sources[i]
			if ref.Ref != name {
				continue
			}
			if !sameRepo(ref.RepoURL, src.RepoURL) || argoRef(ref.TargetRevision) != argoRef(src.TargetRevision) {
				return "", fmt.Errorf("%q comes from source %q, %s at %q; pinbot renders one repository at one revision, %s at %q",
					f, name, ref.RepoURL, ref.TargetRevision, src.RepoURL, src.TargetRevision)
			}
			rel, err := cleanPath(rest)
			if err != nil {
				return "", fmt.Errorf("%q: %w", f, err)
			}
			if rel == "" {
				return "", fmt.Errorf("%q names no file of source %q", f, name)
			}
			up := ""
			if chartPath != "" {
				up = strings.Repeat("../", strings.Count(chartPath, "/")+1)
			}
			return up + rel, nil
		}
		return "", fmt.Errorf("%q: no source has ref: %s", f, name)
	}
}

// sameRepo reports whether two repoURLs name one repository, as Argo CD
// normalises them: case-insensitive, with or without ".git" or a trailing
// slash.
func sameRepo(a, b string) bool {
	norm := func(u string) string {
		return strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(u), "/"), ".git")
	}
	return norm(a) == norm(b)
}

// helm turns spec.source.helm into the renderer's terms; refFile resolves
// a value file of a ref source ("$values/prod.yaml").
func (a *Application) helm(h *ApplicationSourceHelm, field string, refFile func(string) (string, error)) (*Helm, error) {
	obj := a.Name()
	fail := func(f, format string, args ...any) (*Helm, error) {
		return nil, &FieldError{Object: obj, Field: field + f, Reason: fmt.Sprintf(format, args...)}
	}
	if len(h.FileParameters) > 0 {
		return fail(".fileParameters", "pinbot does not render Helm file parameters (--set-file)")
	}
	var files []string
	for i, f := range h.ValueFiles {
		switch {
		case strings.HasPrefix(f, "$"):
			local, err := refFile(f)
			if err != nil {
				return fail(fmt.Sprintf(".valueFiles[%d]", i), "%s", err)
			}
			files = append(files, local)
		case strings.Contains(f, "://"):
			return fail(fmt.Sprintf(".valueFiles[%d]", i), "%q is a URL; pinbot fetches nothing while rendering", f)
		default:
			files = append(files, f)
		}
	}
	out := &Helm{
		ReleaseName:             h.ReleaseName,
		Namespace:               h.Namespace,
		ValueFiles:              files,
		IgnoreMissingValueFiles: h.IgnoreMissingValueFiles,
		SkipCRDs:                h.SkipCrds,
		KubeVersion:             h.KubeVersion,
		APIVersions:             append([]string(nil), h.APIVersions...),
	}
	if out.ReleaseName == "" {
		out.ReleaseName = a.Metadata.Name
	}
	if out.Namespace == "" {
		out.Namespace = a.Spec.Destination.Namespace
	}
	switch {
	case h.ValuesObject != nil:
		out.Values = h.ValuesObject
	case strings.TrimSpace(h.Values) != "":
		v := map[string]any{}
		if err := sigsyaml.Unmarshal([]byte(h.Values), &v); err != nil {
			return fail(".values", "parsing YAML: %s", err)
		}
		out.Values = v
	}
	out.Parameters = helmParameters(h.Parameters)
	return out, nil
}

// helmParameters orders parameters as Argo CD passes them to Helm: one
// --set per name with its last value, then one --set-string per name.
func helmParameters(ps []HelmParameter) []HelmParameter {
	var out []HelmParameter
	for _, force := range []bool{false, true} {
		at := map[string]int{}
		for _, p := range ps {
			if p.ForceString != force {
				continue
			}
			if i, ok := at[p.Name]; ok {
				out[i].Value = p.Value
				continue
			}
			at[p.Name] = len(out)
			out = append(out, p)
		}
	}
	return out
}

// cleanPath turns a deployer's path ("./apps/web", "/", ".") into a
// cleaned relative one ("apps/web", "" for the root), refusing one that
// leaves the repository.
func cleanPath(p string) (string, error) {
	if strings.Contains(p, "\\") {
		return "", fmt.Errorf("%q: want a slash-separated path", p)
	}
	c := path.Clean("/" + p)
	if strings.HasPrefix(path.Clean(p), "../") || path.Clean(p) == ".." {
		return "", fmt.Errorf("%q leaves the repository", p)
	}
	return strings.TrimPrefix(c, "/"), nil
}
