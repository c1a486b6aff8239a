package deployer

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Default namespaces of the deployers' objects, as their installs create
// them.
const (
	DefaultArgoCDNamespace = "argocd"
	DefaultFluxNamespace   = "flux-system"
)

// ArgoCDApp is the `argocd:` block of a verify-only app in the reconciler
// config: `argocd: {application: guestbook, namespace: argocd}`.
type ArgoCDApp struct {
	// Application is the name of the Application.
	Application string `yaml:"application" json:"application"`
	// Namespace holds the Application. Default "argocd".
	Namespace string `yaml:"namespace" json:"namespace,omitempty"`
	// Via is how pinbot reads the Pods: "kubernetes" from the cluster
	// the Application deploys to, or "api" through Argo CD's API server,
	// with no credentials of that cluster. Default: the config's
	// argocd.via, else "kubernetes".
	Via string `yaml:"via" json:"via,omitempty"`
}

// Ways of reading an Argo CD Application's Pods.
const (
	ViaKubernetes = "kubernetes"
	ViaAPI        = "api"
)

// FluxApp is the `flux:` block of a verify-only app in the reconciler
// config: `flux: {kustomization: podinfo, namespace: flux-system}`, or
// `flux: {helmRelease: podinfo}`.
type FluxApp struct {
	// Kustomization is the name of the Kustomization.
	Kustomization string `yaml:"kustomization" json:"kustomization,omitempty"`
	// HelmRelease is the name of the HelmRelease, in place of a
	// Kustomization.
	HelmRelease string `yaml:"helmRelease" json:"helmRelease,omitempty"`
	// Namespace holds the Kustomization or HelmRelease. Default
	// "flux-system".
	Namespace string `yaml:"namespace" json:"namespace,omitempty"`
}

// AppConfig is what Validate checks of one app of the reconciler config:
// its deployer block and the keys that must not stand next to it.
type AppConfig struct {
	ArgoCD *ArgoCDApp
	Flux   *FluxApp
	// Repo, Path and Branch are the app's keys of those names, as
	// written (before Load applies defaults such as branch "main").
	Repo, Path, Branch string
	// Helm is true when the app has a `helm:` block.
	Helm bool
	// Applies is true when syncPolicy turns on automated, selfHeal or
	// prune.
	Applies bool
}

// Validate lists what is wrong with an app's deployer block: both
// `argocd:` and `flux:`; `repo`, `path`, `branch` or `helm` next to either
// (the deployer's object names them); a sync policy that would apply, heal
// or prune a verify-only app; a missing or malformed object name or
// namespace. Each problem is a *FieldError whose Field is the config key
// at fault ("repo", "argocd.application"), so the caller can name its
// line. An app with neither block has no problems here.
func Validate(c AppConfig) []*FieldError {
	var out []*FieldError
	add := func(field, format string, args ...any) {
		out = append(out, &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)})
	}
	var block string
	switch {
	case c.ArgoCD != nil && c.Flux != nil:
		add("flux", "an app has one deployer: argocd or flux, not both")
		block = "argocd"
	case c.ArgoCD != nil:
		block = "argocd"
	case c.Flux != nil:
		block = "flux"
	default:
		return nil
	}
	for _, k := range []struct {
		key string
		set bool
	}{{"repo", c.Repo != ""}, {"path", c.Path != ""}, {"branch", c.Branch != ""}, {"helm", c.Helm}} {
		if k.set {
			add(k.key, "not allowed next to %s: (the deployer's object names the repository, path, revision and Helm settings)", block)
		}
	}
	if c.Applies {
		add("syncPolicy", "an app next to %s: is verify-only: pinbot never applies, heals or prunes it", block)
	}
	if c.ArgoCD != nil {
		checkName(add, "argocd.application", c.ArgoCD.Application)
		checkNamespace(add, "argocd.namespace", c.ArgoCD.Namespace)
		if v := c.ArgoCD.Via; v != "" && v != ViaKubernetes && v != ViaAPI {
			add("argocd.via", "%q: want %s or %s", v, ViaKubernetes, ViaAPI)
		}
	}
	if c.Flux != nil {
		switch {
		case c.Flux.Kustomization != "" && c.Flux.HelmRelease != "":
			add("flux.helmRelease", "set next to flux.kustomization; an app follows one of them")
		case c.Flux.HelmRelease != "":
			checkName(add, "flux.helmRelease", c.Flux.HelmRelease)
		default:
			checkName(add, "flux.kustomization", c.Flux.Kustomization)
		}
		checkNamespace(add, "flux.namespace", c.Flux.Namespace)
	}
	return out
}

func checkName(add func(string, string, ...any), field, name string) {
	switch {
	case name == "":
		add(field, "required")
	case len(validation.IsDNS1123Subdomain(name)) > 0:
		add(field, "%q: want a Kubernetes object name (lowercase letters, digits, '-', '.')", name)
	}
}

func checkNamespace(add func(string, string, ...any), field, ns string) {
	if ns != "" && len(validation.IsDNS1123Label(ns)) > 0 {
		add(field, "%q: want a namespace name", ns)
	}
}

// Object is the namespace and name of the Application the block names,
// the namespace defaulted.
func (a ArgoCDApp) Object() (namespace, name string) {
	if a.Namespace == "" {
		return DefaultArgoCDNamespace, a.Application
	}
	return a.Namespace, a.Application
}

// Object is the namespace and name of the Kustomization or HelmRelease
// the block names, the namespace defaulted.
func (f FluxApp) Object() (namespace, name string) {
	name = f.Kustomization
	if f.HelmRelease != "" {
		name = f.HelmRelease
	}
	if f.Namespace == "" {
		return DefaultFluxNamespace, name
	}
	return f.Namespace, name
}
