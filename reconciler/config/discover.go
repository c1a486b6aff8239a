package config

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"

	"pinbot.dev/pinbot/reconciler/deployer"
)

// VerifyAnnotation on an Argo CD Application selects it for an
// `argocd: {annotated: true}` discovery.
const VerifyAnnotation = "pinbot.dev/verify"

// Discovery selects many deployer objects at once: each match becomes a
// verify-only app named after its object, and apps come and go with the
// objects. Exactly one of ArgoCD and Flux is set.
type Discovery struct {
	// ArgoCD selects Argo CD Applications.
	ArgoCD *ArgoCDSelector `yaml:"argocd" json:"argocd,omitempty"`
	// Flux selects Flux Kustomizations.
	Flux *FluxSelector `yaml:"flux" json:"flux,omitempty"`
}

// ArgoCDSelector selects Argo CD Applications of one namespace by label
// selector, by project, or by the annotation pinbot.dev/verify: "true";
// an Application must match each one given.
type ArgoCDSelector struct {
	// Namespace holds the Applications. Default "argocd".
	Namespace string `yaml:"namespace" json:"namespace,omitempty"`
	// Selector is a label selector, as kubectl -l takes it.
	Selector string `yaml:"selector" json:"selector,omitempty"`
	// Project is the Applications' spec.project.
	Project string `yaml:"project" json:"project,omitempty"`
	// Annotated selects the Applications annotated pinbot.dev/verify: "true".
	Annotated bool `yaml:"annotated" json:"annotated,omitempty"`
}

// FluxSelector selects Flux Kustomizations, or HelmReleases, of one
// namespace by label selector.
type FluxSelector struct {
	// Kind is Kustomization (the default) or HelmRelease.
	Kind string `yaml:"kind" json:"kind,omitempty" jsonschema:"enum=Kustomization,enum=HelmRelease"`
	// Namespace holds the objects. Default "flux-system".
	Namespace string `yaml:"namespace" json:"namespace,omitempty"`
	// Selector is a label selector, as kubectl -l takes it.
	Selector string `yaml:"selector" json:"selector,omitempty"`
}

// HelmReleases reports whether the selector selects HelmReleases.
func (f *FluxSelector) HelmReleases() bool { return f != nil && f.Kind == deployer.HelmReleaseKind }

// Selected is a deployer object as a discovery sees it.
type Selected struct {
	Namespace, Name string
	Labels          map[string]string
	Annotations     map[string]string
	// Project is an Application's spec.project.
	Project string
	// Repos are the Git repositories an Application deploys from: its
	// spec.source's and spec.sources' repoURLs.
	Repos []string
	// Destination is where the object deploys to, "CLUSTER/NAMESPACE",
	// or "" when it names no namespace (App.Destination).
	Destination string
}

// Kind is who deploys what the discovery selects.
func (d Discovery) Kind() deployer.Kind {
	if d.ArgoCD != nil {
		return deployer.ArgoCD
	}
	return deployer.Flux
}

// Namespace is where the discovery looks, its default applied.
func (d Discovery) Namespace() string {
	switch {
	case d.ArgoCD != nil && d.ArgoCD.Namespace != "":
		return d.ArgoCD.Namespace
	case d.ArgoCD != nil:
		return deployer.DefaultArgoCDNamespace
	case d.Flux.Namespace != "":
		return d.Flux.Namespace
	}
	return deployer.DefaultFluxNamespace
}

// LabelSelector is the selector's string, "" for every object.
func (d Discovery) LabelSelector() string {
	if d.ArgoCD != nil {
		return d.ArgoCD.Selector
	}
	return d.Flux.Selector
}

// Matches reports whether the discovery selects o. Pure.
func (d Discovery) Matches(o Selected) bool { return d.Matcher()(o) }

// Matcher is Matches with the selector parsed once, for many objects.
func (d Discovery) Matcher() func(Selected) bool {
	ns := d.Namespace()
	sel, err := labels.Parse(d.LabelSelector())
	if err != nil {
		return func(Selected) bool { return false }
	}
	return func(o Selected) bool {
		if o.Namespace != ns || !sel.Matches(labels.Set(o.Labels)) {
			return false
		}
		if a := d.ArgoCD; a != nil {
			if a.Project != "" && o.Project != a.Project {
				return false
			}
			if a.Annotated && o.Annotations[VerifyAnnotation] != "true" {
				return false
			}
		}
		return true
	}
}

// App is the verify-only app of the selected object o.
func (d Discovery) App(o Selected) App {
	if d.ArgoCD != nil {
		return App{Name: o.Name, ArgoCD: &deployer.ArgoCDApp{Application: o.Name, Namespace: o.Namespace}, DeployedFrom: o.Repos, Destination: o.Destination}
	}
	if d.Flux.HelmReleases() {
		return App{Name: o.Name, Flux: &deployer.FluxApp{HelmRelease: o.Name, Namespace: o.Namespace}, Destination: o.Destination}
	}
	return App{Name: o.Name, Flux: &deployer.FluxApp{Kustomization: o.Name, Namespace: o.Namespace}, Destination: o.Destination}
}

// problems lists what is wrong with the discovery.
func (d Discovery) problems() []string {
	if (d.ArgoCD == nil) == (d.Flux == nil) {
		return []string{"want exactly one of argocd: and flux:"}
	}
	var out []string
	if _, err := labels.Parse(d.LabelSelector()); err != nil {
		out = append(out, fmt.Sprintf("selector: %s", err))
	}
	if a := d.ArgoCD; a != nil && a.Selector == "" && a.Project == "" && !a.Annotated {
		out = append(out, "argocd: want selector, project or annotated: true (a discovery selects some Applications, never every one by accident)")
	}
	if f := d.Flux; f != nil && f.Selector == "" {
		out = append(out, "flux: want a selector")
	}
	if f := d.Flux; f != nil && f.Kind != "" && f.Kind != deployer.KustomizationKind && f.Kind != deployer.HelmReleaseKind {
		out = append(out, fmt.Sprintf("flux.kind: %q: want %s or %s", f.Kind, deployer.KustomizationKind, deployer.HelmReleaseKind))
	}
	return out
}

// WithDiscovered returns the config with apps, the discovered verify-only
// apps, added after its own; an app of the config wins over a discovered
// one of the same name, and of two discovered apps of one name the first
// wins. skipped names the apps left out.
func (c *Config) WithDiscovered(apps []App) (out *Config, skipped []string) {
	cp := *c
	cp.Apps = append([]App(nil), c.Apps...)
	seen := map[string]bool{}
	for _, a := range c.Apps {
		seen[a.Name] = true
	}
	for _, a := range apps {
		if seen[a.Name] {
			skipped = append(skipped, a.Name)
			continue
		}
		seen[a.Name] = true
		cp.Apps = append(cp.Apps, a)
	}
	return &cp, skipped
}
