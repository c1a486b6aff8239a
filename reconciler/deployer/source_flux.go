package deployer

import (
	"fmt"
	"strings"
)

// Source returns what the Kustomization follows, given the GitRepository
// it names (see Kustomization.GitRepository). Sources pinbot cannot render
// as Flux does are a *FieldError: components, included repositories, a
// semver range, a postBuild key other than substitute and substituteFrom. Its images, patches and name
// prefix and suffix are Source.Kustomize.
func (k *Kustomization) Source(repo *GitRepository) (Source, error) {
	obj := k.Name()
	fail := func(o, field, format string, args ...any) (Source, error) {
		return Source{}, &FieldError{Object: o, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	ns, name, err := k.GitRepository()
	if err != nil {
		return Source{}, err
	}
	if repo == nil || repo.Metadata.Name != name || repo.Metadata.Namespace != ns {
		got := "none"
		if repo != nil {
			got = repo.Name()
		}
		return fail(obj, "spec.sourceRef", "names GitRepository %s/%s, given %s", ns, name, got)
	}
	s := k.Spec
	switch {
	case len(s.Components) > 0:
		return fail(obj, "spec.components", "pinbot does not render the Kustomization's components")
	case len(repo.Spec.Include) > 0:
		return fail(repo.Name(), "spec.include", "pinbot does not follow included repositories")
	case repo.Spec.URL == "":
		return fail(repo.Name(), "spec.url", "empty")
	}
	p, err := cleanPath(s.Path)
	if err != nil {
		return fail(obj, "spec.path", "%s", err)
	}
	ref, err := fluxRef(repo)
	if err != nil {
		return Source{}, err
	}
	cluster, err := k.cluster()
	if err != nil {
		return Source{}, err
	}
	sub, err := k.substitute()
	if err != nil {
		return Source{}, err
	}
	return Source{
		Kind:       Flux,
		Object:     obj,
		RepoURL:    repo.Spec.URL,
		Path:       p,
		Ref:        ref,
		Namespace:  s.TargetNamespace,
		Index:      -1,
		Cluster:    cluster,
		Kustomize:  fluxOverrides(s),
		Substitute: sub,
	}, nil
}

// substitute reads spec.postBuild.
func (k *Kustomization) substitute() (*Substitute, error) {
	pb := k.Spec.PostBuild
	if pb == nil {
		return nil, nil
	}
	fail := func(field, format string, args ...any) (*Substitute, error) {
		return nil, &FieldError{Object: k.Name(), Field: "spec.postBuild" + field, Reason: fmt.Sprintf(format, args...)}
	}
	out := &Substitute{Vars: map[string]string{}, Namespace: k.Metadata.Namespace}
	for key, v := range pb {
		switch key {
		case "substitute":
			m, ok := v.(map[string]any)
			if !ok {
				return fail(".substitute", "want a mapping of variable names to strings")
			}
			for name, val := range m {
				str, ok := val.(string)
				if !ok {
					return fail(".substitute."+name, "want a string")
				}
				out.Vars[name] = str
			}
		case "substituteFrom":
			list, _ := v.([]any)
			for i, e := range list {
				m, _ := e.(map[string]any)
				kind, _ := m["kind"].(string)
				name, _ := m["name"].(string)
				optional, _ := m["optional"].(bool)
				if (kind != "ConfigMap" && kind != "Secret") || name == "" {
					return fail(fmt.Sprintf(".substituteFrom[%d]", i), "want {kind: ConfigMap or Secret, name}")
				}
				out.From = append(out.From, VarsFrom{Kind: kind, Name: name, Optional: optional})
			}
		default:
			return fail("."+key, "pinbot renders substitute and substituteFrom, not this one")
		}
	}
	return out, nil
}

// cluster is the remote cluster spec.kubeConfig names, nil for Flux's
// own (kubeConfigCluster).
func (k *Kustomization) cluster() (*Cluster, error) {
	return kubeConfigCluster(k.Name(), k.Metadata.Namespace, k.Spec.KubeConfig)
}

// fluxRef applies source-controller's precedence: commit, name, semver,
// tag, branch, and "master" when none is set.
func fluxRef(repo *GitRepository) (GitRef, error) {
	r := repo.Spec.Ref
	switch {
	case r == nil:
		return GitRef{Branch: "master"}, nil
	case r.Commit != "":
		c := strings.ToLower(r.Commit)
		if !hexCommit.MatchString(c) {
			return GitRef{}, &FieldError{Object: repo.Name(), Field: "spec.ref.commit", Reason: fmt.Sprintf("%q: want a full commit id", r.Commit)}
		}
		return GitRef{Commit: c}, nil
	case r.Name != "":
		return GitRef{Name: r.Name}, nil
	case r.SemVer != "":
		return GitRef{}, &FieldError{Object: repo.Name(), Field: "spec.ref.semver", Reason: "pinbot follows a branch, tag or commit, not a semver range"}
	case r.Tag != "":
		return GitRef{Tag: r.Tag}, nil
	case r.Branch != "":
		return GitRef{Branch: r.Branch}, nil
	}
	return GitRef{Branch: "master"}, nil
}
