package deployer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidate(t *testing.T) {
	argo := &ArgoCDApp{Application: "guestbook", Namespace: "argocd"}
	flux := &FluxApp{Kustomization: "podinfo"}
	tests := []struct {
		name string
		c    AppConfig
		// want lists "field: reason-prefix" of each problem, in order.
		want []string
	}{
		{name: "pinbot's own app", c: AppConfig{Repo: "https://git.example/x.git", Path: "deploy", Branch: "main", Helm: true, Applies: true}},
		{name: "argocd alone", c: AppConfig{ArgoCD: argo}},
		{name: "flux alone, default namespace", c: AppConfig{Flux: flux}},
		{
			name: "repo, path and branch next to argocd",
			c:    AppConfig{ArgoCD: argo, Repo: "https://git.example/x.git", Path: "deploy", Branch: "main"},
			want: []string{"repo", "path", "branch"},
		},
		{
			name: "helm and a sync policy next to flux",
			c:    AppConfig{Flux: flux, Helm: true, Applies: true},
			want: []string{"helm", "syncPolicy"},
		},
		{
			name: "both deployers",
			c:    AppConfig{ArgoCD: argo, Flux: flux},
			want: []string{"flux"},
		},
		{
			name: "names missing or malformed",
			c:    AppConfig{ArgoCD: &ArgoCDApp{Namespace: "Argo_CD"}, Flux: &FluxApp{Kustomization: "Pod Info"}},
			want: []string{"flux", "argocd.application", "argocd.namespace", "flux.kustomization"},
		},
		{name: "a HelmRelease", c: AppConfig{Flux: &FluxApp{HelmRelease: "podinfo"}}},
		{
			name: "a HelmRelease next to a Kustomization",
			c:    AppConfig{Flux: &FluxApp{HelmRelease: "podinfo", Kustomization: "podinfo"}},
			want: []string{"flux.helmRelease"},
		},
		{
			name: "a malformed HelmRelease name",
			c:    AppConfig{Flux: &FluxApp{HelmRelease: "Pod Info"}},
			want: []string{"flux.helmRelease"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, fe := range Validate(tc.c) {
				if fe.Object != "" || fe.Reason == "" {
					t.Errorf("problem %+v: want a config key and a reason", fe)
				}
				got = append(got, fe.Field)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate fields (-want +got):\n%s", diff)
			}
		})
	}
	p := Validate(AppConfig{ArgoCD: argo, Repo: "x"})
	if len(p) != 1 || p[0].Error() != "repo: not allowed next to argocd: (the deployer's object names the repository, path, revision and Helm settings)" {
		t.Errorf("Validate message = %v", p)
	}
}

func TestObject(t *testing.T) {
	tests := []struct {
		name             string
		object           func() (string, string)
		wantNS, wantName string
	}{
		{"argocd, default namespace", ArgoCDApp{Application: "gb"}.Object, "argocd", "gb"},
		{"argocd, own namespace", ArgoCDApp{Application: "gb", Namespace: "apps"}.Object, "apps", "gb"},
		{"flux, default namespace", FluxApp{Kustomization: "pi"}.Object, "flux-system", "pi"},
		{"flux, own namespace", FluxApp{Kustomization: "pi", Namespace: "apps"}.Object, "apps", "pi"},
		{"flux HelmRelease", FluxApp{HelmRelease: "hr"}.Object, "flux-system", "hr"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns, name := tc.object()
			if ns != tc.wantNS || name != tc.wantName {
				t.Errorf("Object() = %s/%s, want %s/%s", ns, name, tc.wantNS, tc.wantName)
			}
		})
	}
}
