package config

import (
	"strings"
	"testing"

	"pinbot.dev/pinbot/reconciler/deployer"
)

func TestDiscoveryMatches(t *testing.T) {
	web := Selected{Namespace: "argocd", Name: "web", Labels: map[string]string{"team": "shop"}, Project: "prod",
		Annotations: map[string]string{VerifyAnnotation: "true"}}
	for _, tc := range []struct {
		name string
		d    Discovery
		o    Selected
		want bool
	}{
		{"by label", Discovery{ArgoCD: &ArgoCDSelector{Selector: "team=shop"}}, web, true},
		{"another label", Discovery{ArgoCD: &ArgoCDSelector{Selector: "team=ops"}}, web, false},
		{"by project", Discovery{ArgoCD: &ArgoCDSelector{Project: "prod"}}, web, true},
		{"another project", Discovery{ArgoCD: &ArgoCDSelector{Project: "dev"}}, web, false},
		{"annotated", Discovery{ArgoCD: &ArgoCDSelector{Annotated: true}}, web, true},
		{"not annotated", Discovery{ArgoCD: &ArgoCDSelector{Annotated: true}}, Selected{Namespace: "argocd", Name: "x"}, false},
		{"label and project, both", Discovery{ArgoCD: &ArgoCDSelector{Selector: "team=shop", Project: "dev"}}, web, false},
		{"another namespace", Discovery{ArgoCD: &ArgoCDSelector{Namespace: "apps", Selector: "team=shop"}}, web, false},
		{"flux by label", Discovery{Flux: &FluxSelector{Selector: "team in (shop, ops)"}},
			Selected{Namespace: "flux-system", Name: "podinfo", Labels: map[string]string{"team": "ops"}}, true},
	} {
		if got := tc.d.Matches(tc.o); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDiscoveryConfig(t *testing.T) {
	good := "discover:\n  - argocd: {selector: team=shop}\n  - flux: {namespace: flux-system, selector: 'app in (a,b)'}\n"
	c, err := Parse("c.yaml", []byte(good))
	if err != nil {
		t.Fatalf("a config of discoveries alone: %s", err)
	}
	if len(c.Discover) != 2 || c.Discover[1].Namespace() != "flux-system" {
		t.Errorf("parsed %+v", c.Discover)
	}
	for _, tc := range []struct{ body, want string }{
		{"discover:\n  - {}\n", "c.yaml:2: discover[0]: want exactly one of argocd: and flux:"},
		{"discover:\n  - argocd: {namespace: argocd}\n", "c.yaml:2: discover[0]: argocd: want selector, project or annotated: true"},
		{"discover:\n  - flux: {selector: 'a in ('}\n", "c.yaml:2: discover[0]: selector:"},
		{"discover:\n  - argocd: {selectr: x}\n", `c.yaml:2: unknown field "selectr"`},
		{"discover:\n  - flux: {kind: Helm, selector: a=b}\n", `c.yaml:2: discover[0]: flux.kind: "Helm": want Kustomization or HelmRelease`},
	} {
		if _, err := Parse("c.yaml", []byte(tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.body, err, tc.want)
		}
	}
	// An app of the config wins over a discovered one of its name.
	c, err = Parse("c.yaml", []byte("apps:\n  - {name: web, argocd: {application: web-prod}}\ndiscover:\n  - argocd: {project: prod}\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := c.Discover[0]
	merged, skipped := c.WithDiscovered([]App{d.App(Selected{Namespace: "argocd", Name: "web"}), d.App(Selected{Namespace: "argocd", Name: "api"})})
	if len(merged.Apps) != 2 || merged.Apps[0].ArgoCD.Application != "web-prod" || merged.Apps[1].Name != "api" || len(skipped) != 1 || skipped[0] != "web" {
		t.Errorf("WithDiscovered: apps %+v, skipped %v", merged.Apps, skipped)
	}
	if len(c.Apps) != 1 {
		t.Errorf("WithDiscovered changed the config it was called on: %+v", c.Apps)
	}
	// A discovery of HelmReleases makes HelmRelease apps.
	c, err = Parse("c.yaml", []byte("discover:\n  - flux: {kind: HelmRelease, selector: team=shop}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a := c.Discover[0].App(Selected{Namespace: "flux-system", Name: "podinfo"}); a.Flux == nil || a.Flux.HelmRelease != "podinfo" || a.Flux.Kustomization != "" {
		t.Errorf("a HelmRelease discovery's app = %+v", a.Flux)
	}
}

// An app is shared out among serve's replicas by where it deploys, so
// that a namespace's apps fall in one shard; one whose config names no
// namespace, by its name.
func TestShardKey(t *testing.T) {
	kube := &ClusterRef{KubeConfig: KubeConfigRef{SecretRef: SecretKeyRef{Name: "eu-1"}}}
	for _, tc := range []struct {
		app  App
		want string
	}{
		{App{Name: "web", Namespace: "shop"}, "/shop"},
		{App{Name: "web", Namespace: "shop", Cluster: kube}, "eu-1/shop"},
		{App{Name: "web"}, "web"},
		{App{Name: "web", Namespace: "shop", ArgoCD: &deployer.ArgoCDApp{Application: "web"}}, "web"},
		{App{Name: "web", ArgoCD: &deployer.ArgoCDApp{Application: "web"}, Destination: "eu-1/shop"}, "eu-1/shop"},
	} {
		if got := tc.app.ShardKey(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.app, got, tc.want)
		}
	}
}
