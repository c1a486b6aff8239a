package deployer

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const appHeader = `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: guestbook, namespace: argocd}
`

func TestApplicationSource(t *testing.T) {
	tests := []struct {
		name string
		spec string
		want Source
	}{
		{
			name: "plain path on a branch, Helm defaults",
			spec: `
spec:
  source: {repoURL: "https://git.example/team/guestbook.git", path: ./apps/guestbook/, targetRevision: main}
  destination: {server: "https://kubernetes.default.svc", namespace: web}`,
			want: Source{
				Kind: ArgoCD, Object: "Application argocd/guestbook", RepoURL: "https://git.example/team/guestbook.git",
				Path: "apps/guestbook", Ref: GitRef{Revision: "main"}, Namespace: "web", Index: -1,
				Helm: &Helm{ReleaseName: "guestbook", Namespace: "web"},
			},
		},
		{
			name: "root path, HEAD by default, destination by name",
			spec: `
spec:
  source: {repoURL: "https://git.example/x.git", path: .}
  destination: {name: in-cluster, namespace: web}`,
			want: Source{
				Kind: ArgoCD, Object: "Application argocd/guestbook", RepoURL: "https://git.example/x.git",
				Ref: GitRef{Revision: "HEAD"}, Namespace: "web", Index: -1,
				Helm: &Helm{ReleaseName: "guestbook", Namespace: "web"},
			},
		},
		{
			name: "multi-source: value files of a ref source of the same repository and revision",
			spec: `
spec:
  sources:
  - {repoURL: "https://git.example/x.git", path: charts/web, targetRevision: main, helm: {valueFiles: [values.yaml, $values/envs/prod/values.yaml]}}
  - {repoURL: "https://GIT.example/x", targetRevision: main, ref: values}
  destination: {server: "https://kubernetes.default.svc", namespace: web}`,
			want: Source{
				Kind: ArgoCD, Object: "Application argocd/guestbook", RepoURL: "https://git.example/x.git", Path: "charts/web",
				Ref: GitRef{Revision: "main"}, Namespace: "web", Index: 0,
				Helm: &Helm{ReleaseName: "guestbook", Namespace: "web", ValueFiles: []string{"values.yaml", "../../envs/prod/values.yaml"}},
			},
		},
		{
			name: "a commit as targetRevision",
			spec: `
spec:
  source: {repoURL: "https://git.example/x.git", path: web, targetRevision: 0123456789ABCDEF0123456789abcdef01234567}
  destination: {server: "https://kubernetes.default.svc"}`,
			want: Source{
				Kind: ArgoCD, Object: "Application argocd/guestbook", RepoURL: "https://git.example/x.git", Path: "web",
				Ref: GitRef{Commit: "0123456789abcdef0123456789abcdef01234567"}, Index: -1,
				Helm: &Helm{ReleaseName: "guestbook"},
			},
		},
		{
			name: "Helm: values parsed, parameters in Argo CD's order",
			spec: `
spec:
  source:
    repoURL: "https://git.example/x.git"
    path: charts/web
    targetRevision: v1.2.0
    helm:
      releaseName: web-prod
      namespace: web-release
      valueFiles: [values.yaml, values-prod.yaml]
      values: |
        replicaCount: 2
        image: {tag: v1}
      parameters:
      - {name: image.tag, value: v2, forceString: true}
      - {name: replicaCount, value: "3"}
      - {name: image.tag, value: v3, forceString: true}
      - {name: service.port, value: "80"}
      - {name: replicaCount, value: "4"}
      ignoreMissingValueFiles: true
      skipCrds: true
      kubeVersion: "1.30.0"
      apiVersions: [monitoring.coreos.com/v1]
  destination: {server: "https://kubernetes.default.svc", namespace: web}`,
			want: Source{
				Kind: ArgoCD, Object: "Application argocd/guestbook", RepoURL: "https://git.example/x.git", Path: "charts/web",
				Ref: GitRef{Revision: "v1.2.0"}, Namespace: "web", Index: -1,
				Helm: &Helm{
					ReleaseName: "web-prod", Namespace: "web-release",
					ValueFiles: []string{"values.yaml", "values-prod.yaml"},
					Values:     map[string]any{"replicaCount": float64(2), "image": map[string]any{"tag": "v1"}},
					Parameters: []HelmParameter{
						{Name: "replicaCount", Value: "4"}, {Name: "service.port", Value: "80"},
						{Name: "image.tag", Value: "v3", ForceString: true},
					},
					IgnoreMissingValueFiles: true, SkipCRDs: true,
					KubeVersion: "1.30.0", APIVersions: []string{"monitoring.coreos.com/v1"},
				},
			},
		},
		{
			name: "Helm: valuesObject replaces values",
			spec: `
spec:
  source:
    repoURL: "https://git.example/x.git"
    path: charts/web
    helm:
      values: "replicaCount: 2\nfrom: values"
      valuesObject: {replicaCount: 5}
  destination: {server: "https://kubernetes.default.svc", namespace: web}`,
			want: Source{
				Kind: ArgoCD, Object: "Application argocd/guestbook", RepoURL: "https://git.example/x.git", Path: "charts/web",
				Ref: GitRef{Revision: "HEAD"}, Namespace: "web", Index: -1,
				Helm: &Helm{ReleaseName: "guestbook", Namespace: "web", Values: map[string]any{"replicaCount": float64(5)}},
			},
		},
		{
			name: "multiple sources: the one with a path, a ref source beside it",
			spec: `
spec:
  sources:
  - {repoURL: "https://git.example/values.git", targetRevision: main, ref: values}
  - {repoURL: "https://git.example/x.git", path: deploy, targetRevision: release}
  destination: {server: "https://kubernetes.default.svc", namespace: web}`,
			want: Source{
				Kind: ArgoCD, Object: "Application argocd/guestbook", RepoURL: "https://git.example/x.git", Path: "deploy",
				Ref: GitRef{Revision: "release"}, Namespace: "web", Index: 1,
				Helm: &Helm{ReleaseName: "guestbook", Namespace: "web"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mustApp(t, appHeader+tc.spec).Source()
			if err != nil {
				t.Fatalf("Source: %s", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Source (-want +got):\n%s", diff)
			}
		})
	}
}

// TestArgoRefCommit checks that a full id, in either case, is a commit,
// as Argo CD's own check is, and anything else a name to resolve.
func TestArgoRefCommit(t *testing.T) {
	for rev, want := range map[string]GitRef{
		"":        {Revision: "HEAD"},
		"HEAD":    {Revision: "HEAD"},
		"main":    {Revision: "main"},
		"v1.0":    {Revision: "v1.0"},
		"abc1234": {Revision: "abc1234"},
		"0123456789ABCDEF0123456789ABCDEF01234567":                         {Commit: "0123456789abcdef0123456789abcdef01234567"},
		"0123456789abcdef0123456789abcdef01234567":                         {Commit: "0123456789abcdef0123456789abcdef01234567"},
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": {Commit: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
	} {
		if diff := cmp.Diff(want, argoRef(rev)); diff != "" {
			t.Errorf("argoRef(%q) (-want +got):\n%s", rev, diff)
		}
	}
}

func TestApplicationOnAnotherCluster(t *testing.T) {
	for _, tc := range []struct {
		dest string
		want *Cluster
	}{
		{`{server: "https://kubernetes.default.svc", namespace: web}`, nil},
		{`{name: in-cluster, namespace: web}`, nil},
		{`{server: "https://prod.example:6443", namespace: web}`, &Cluster{Server: "https://prod.example:6443"}},
		{`{name: prod, namespace: web}`, &Cluster{Name: "prod"}},
	} {
		src, err := mustApp(t, appHeader+"\nspec:\n  source: {repoURL: x, path: a}\n  destination: "+tc.dest).Source()
		if err != nil {
			t.Fatalf("%s: %v", tc.dest, err)
		}
		if diff := cmp.Diff(tc.want, src.Cluster); diff != "" {
			t.Errorf("%s: cluster (-want +got):\n%s", tc.dest, diff)
		}
	}
}

func TestKustomizeOverrides(t *testing.T) {
	app := mustApp(t, appHeader+`
spec:
  source:
    repoURL: x
    path: a
    kustomize:
      images: ["web=mirror.example/web:v2@sha256:11", "reg.example:5000/api:v3", "db@sha256:22"]
      namePrefix: prod-
      replicas: [{name: web, count: "3"}]
  destination: {server: "https://kubernetes.default.svc", namespace: web}`)
	src, err := app.Source()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"images": []any{
			map[string]any{"name": "web", "newName": "mirror.example/web", "newTag": "v2", "digest": "sha256:11"},
			map[string]any{"name": "reg.example:5000/api", "newTag": "v3"},
			map[string]any{"name": "db", "digest": "sha256:22"},
		},
		"namePrefix": "prod-",
		"replicas":   []any{map[string]any{"name": "web", "count": int64(3)}},
	}
	if diff := cmp.Diff(want, src.Kustomize); diff != "" {
		t.Errorf("Argo CD overrides (-want +got):\n%s", diff)
	}
	k := mustKustomization(t, ksHeader+"spec: {sourceRef: {kind: GitRepository, name: podinfo}, images: [{name: web, digest: \"sha256:00\"}], patches: [{patch: x}], nameSuffix: -b}")
	fsrc, err := k.Source(mustGitRepository(t, repoHeader+"spec: {url: x}"))
	if err != nil {
		t.Fatal(err)
	}
	if fsrc.Kustomize["nameSuffix"] != "-b" || len(fsrc.Kustomize["images"].([]any)) != 1 || len(fsrc.Kustomize["patches"].([]any)) != 1 {
		t.Errorf("Flux overrides = %v", fsrc.Kustomize)
	}
}

func TestApplicationChartSource(t *testing.T) {
	a := mustApp(t, appHeader+`
spec:
  source: {repoURL: "oci://registry.example/charts", chart: redis, targetRevision: " 18.*", helm: {releaseName: cache, values: "replicas: 2"}}
  destination: {server: "https://kubernetes.default.svc", namespace: web}
status:
  sync: {status: Synced, revision: 18.2.0}
  operationState: {phase: Succeeded, syncResult: {revision: 18.2.0}}
`)
	src, err := a.Source()
	if err != nil {
		t.Fatal(err)
	}
	want := &Chart{RepoURL: "oci://registry.example/charts", Name: "redis", Version: "18.*", ArgoCDNamespace: "argocd"}
	if src.Chart == nil || *src.Chart != *want || src.Path != "" || src.Helm == nil || src.Helm.ReleaseName != "cache" || src.Helm.Values["replicas"] != float64(2) {
		t.Errorf("Source = %+v (chart %+v, helm %+v), want chart %+v with the Application's Helm settings", src, src.Chart, src.Helm, want)
	}
	rev, err := a.Deployed(src)
	if err != nil || rev.Commit != "18.2.0" {
		t.Errorf("Deployed = %+v, %v; want the chart version 18.2.0", rev, err)
	}
}

func TestApplicationSourceErrors(t *testing.T) {
	dest := "\n  destination: {server: \"https://kubernetes.default.svc\", namespace: web}"
	tests := []struct {
		name, spec, field string
		want              string
	}{
		{"no source", "\nspec:" + dest, "spec.source", "no source"},
		{"Helm repository chart without a version", "\nspec:\n  source: {repoURL: \"https://charts.example\", chart: redis}" + dest, "spec.source.targetRevision", `names no version of chart "redis"`},
		{"Helm repository chart with a value file of a Git source", "\nspec:\n  sources:\n  - {repoURL: \"https://charts.example\", chart: redis, targetRevision: 18.0.0, helm: {valueFiles: [\"$values/prod.yaml\"]}}\n  - {repoURL: x, ref: values}" + dest, "spec.sources[0].helm.valueFiles[0]", "one repository at one revision"},
		{"plugin", "\nspec:\n  source: {repoURL: x, path: a, plugin: {name: cmp}}" + dest, "spec.source.plugin", "plugin"},
		{"kustomize components", "\nspec:\n  source: {repoURL: x, path: a, kustomize: {components: [../c]}}" + dest, "spec.source.kustomize.components", "not this one"},
		{"kustomize patch file", "\nspec:\n  source: {repoURL: x, path: a, kustomize: {patches: [{path: p.yaml}]}}" + dest, "spec.source.kustomize.patches[0].path", "inline patches"},
		{"jsonnet", "\nspec:\n  source: {repoURL: x, path: a, directory: {jsonnet: {tlas: []}}}" + dest, "spec.source.directory.jsonnet", "Jsonnet"},
		{"path escapes", "\nspec:\n  source: {repoURL: x, path: ../other}" + dest, "spec.source.path", "leaves the repository"},
		{"empty repoURL", "\nspec:\n  source: {path: a}" + dest, "spec.source.repoURL", "empty"},
		{"file parameters", "\nspec:\n  source: {repoURL: x, path: a, helm: {fileParameters: [{name: cfg, path: cfg.txt}]}}" + dest, "spec.source.helm.fileParameters", "--set-file"},
		{"value file of another source", "\nspec:\n  sources:\n  - {repoURL: x, path: a, helm: {valueFiles: [values.yaml, \"$values/prod.yaml\"]}}\n  - {repoURL: z, ref: values}" + dest, "spec.sources[0].helm.valueFiles[1]", "one repository at one revision"},
		{"value file of another revision", "\nspec:\n  sources:\n  - {repoURL: x, path: a, targetRevision: main, helm: {valueFiles: [\"$values/prod.yaml\"]}}\n  - {repoURL: x, targetRevision: v2, ref: values}" + dest, "spec.sources[0].helm.valueFiles[0]", "one repository at one revision"},
		{"value file of no source", "\nspec:\n  sources:\n  - {repoURL: x, path: a, helm: {valueFiles: [\"$vals/prod.yaml\"]}}\n  - {repoURL: x, ref: values}" + dest, "spec.sources[0].helm.valueFiles[0]", "no source has ref: vals"},
		{"value file leaving the repository", "\nspec:\n  sources:\n  - {repoURL: x, path: a, helm: {valueFiles: [\"$values/../../etc/passwd\"]}}\n  - {repoURL: x, ref: values}" + dest, "spec.sources[0].helm.valueFiles[0]", "leaves the repository"},
		{"value file URL", "\nspec:\n  source: {repoURL: x, path: a, helm: {valueFiles: [\"https://example.com/v.yaml\"]}}" + dest, "spec.source.helm.valueFiles[0]", "URL"},
		{"bad values YAML", "\nspec:\n  source: {repoURL: x, path: a, helm: {values: \"a: [\"}}" + dest, "spec.source.helm.values", "parsing YAML"},
		{"two sources with paths", "\nspec:\n  sources:\n  - {repoURL: x, path: a}\n  - {repoURL: z, path: b}" + dest, "spec.sources", "found 2"},
		{"no destination", "\nspec:\n  source: {repoURL: x, path: a}\n  destination: {namespace: web}", "spec.destination", "names no server and no name"},
		{"source hydrator", "\nspec:\n  sourceHydrator: {drySource: {repoURL: x}}" + dest, "spec.sourceHydrator", "hydrates"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mustApp(t, appHeader+tc.spec).Source()
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Source error = %v, want a *FieldError", err)
			}
			if fe.Field != tc.field || fe.Object != "Application argocd/guestbook" {
				t.Errorf("FieldError names %q of %q, want %q of Application argocd/guestbook", fe.Field, fe.Object, tc.field)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

const (
	ksHeader = `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: podinfo, namespace: flux-system}
`
	repoHeader = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: podinfo, namespace: flux-system}
`
)

func TestKustomizationSource(t *testing.T) {
	tests := []struct {
		name, ks, repo string
		want           Source
	}{
		{
			name: "branch, target namespace",
			ks:   "spec: {path: ./apps/podinfo, sourceRef: {kind: GitRepository, name: podinfo}, targetNamespace: web}",
			repo: "spec: {url: \"https://git.example/team/podinfo.git\", ref: {branch: main}}",
			want: Source{Kind: Flux, Object: "Kustomization flux-system/podinfo", RepoURL: "https://git.example/team/podinfo.git",
				Path: "apps/podinfo", Ref: GitRef{Branch: "main"}, Namespace: "web", Index: -1},
		},
		{
			name: "no path and no ref: the root of master",
			ks:   "spec: {sourceRef: {kind: GitRepository, name: podinfo, namespace: flux-system}}",
			repo: "spec: {url: \"ssh://git@git.example/podinfo.git\"}",
			want: Source{Kind: Flux, Object: "Kustomization flux-system/podinfo", RepoURL: "ssh://git@git.example/podinfo.git",
				Ref: GitRef{Branch: "master"}, Index: -1},
		},
		{
			name: "commit wins over branch",
			ks:   "spec: {path: ./, sourceRef: {kind: GitRepository, name: podinfo}}",
			repo: "spec: {url: x, ref: {branch: main, commit: 0123456789abcdef0123456789abcdef01234567}}",
			want: Source{Kind: Flux, Object: "Kustomization flux-system/podinfo", RepoURL: "x",
				Ref: GitRef{Commit: "0123456789abcdef0123456789abcdef01234567"}, Index: -1},
		},
		{
			name: "name wins over tag",
			ks:   "spec: {path: deploy, sourceRef: {kind: GitRepository, name: podinfo}}",
			repo: "spec: {url: x, ref: {tag: v1, name: refs/heads/release}}",
			want: Source{Kind: Flux, Object: "Kustomization flux-system/podinfo", RepoURL: "x", Path: "deploy",
				Ref: GitRef{Name: "refs/heads/release"}, Index: -1},
		},
		{
			name: "another cluster through a kubeconfig Secret",
			ks:   "spec: {path: deploy, sourceRef: {kind: GitRepository, name: podinfo}, kubeConfig: {secretRef: {name: prod-kubeconfig, key: value.yaml}}}",
			repo: "spec: {url: x, ref: {branch: main}}",
			want: Source{Kind: Flux, Object: "Kustomization flux-system/podinfo", RepoURL: "x", Path: "deploy",
				Ref: GitRef{Branch: "main"}, Index: -1, Cluster: &Cluster{KubeConfig: &SecretKey{Namespace: "flux-system", Name: "prod-kubeconfig", Key: "value.yaml"}}},
		},
		{
			name: "tag wins over branch",
			ks:   "spec: {path: deploy, sourceRef: {kind: GitRepository, name: podinfo}}",
			repo: "spec: {url: x, ref: {tag: v1, branch: main}}",
			want: Source{Kind: Flux, Object: "Kustomization flux-system/podinfo", RepoURL: "x", Path: "deploy",
				Ref: GitRef{Tag: "v1"}, Index: -1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := mustKustomization(t, ksHeader+tc.ks)
			got, err := k.Source(mustGitRepository(t, repoHeader+tc.repo))
			if err != nil {
				t.Fatalf("Source: %s", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Source (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKustomizationSourceErrors(t *testing.T) {
	okRepo := "spec: {url: x, ref: {branch: main}}"
	tests := []struct {
		name, ks, repo, object, field, want string
	}{
		{"OCI source", "spec: {sourceRef: {kind: OCIRepository, name: podinfo}}", okRepo, "Kustomization flux-system/podinfo", "spec.sourceRef.kind", "OCIRepository"},
		{"other GitRepository", "spec: {sourceRef: {kind: GitRepository, name: other}}", okRepo, "Kustomization flux-system/podinfo", "spec.sourceRef", "flux-system/other"},
		{"other namespace", "spec: {sourceRef: {kind: GitRepository, name: podinfo, namespace: apps}}", okRepo, "Kustomization flux-system/podinfo", "spec.sourceRef", "apps/podinfo"},
		{"postBuild with another key", "spec: {sourceRef: {kind: GitRepository, name: podinfo}, postBuild: {substituteFromX: []}}", okRepo, "Kustomization flux-system/podinfo", "spec.postBuild.substituteFromX", "not this one"},
		{"substituteFrom of another kind", "spec: {sourceRef: {kind: GitRepository, name: podinfo}, postBuild: {substituteFrom: [{kind: Pod, name: x}]}}", okRepo, "Kustomization flux-system/podinfo", "spec.postBuild.substituteFrom[0]", "ConfigMap or Secret"},
		{"kubeConfig of a provider", "spec: {sourceRef: {kind: GitRepository, name: podinfo}, kubeConfig: {configMapRef: {name: k}}}", okRepo, "Kustomization flux-system/podinfo", "spec.kubeConfig", "configMapRef"},
		{"path escapes", "spec: {path: ../x, sourceRef: {kind: GitRepository, name: podinfo}}", okRepo, "Kustomization flux-system/podinfo", "spec.path", "leaves"},
		{"semver", "spec: {sourceRef: {kind: GitRepository, name: podinfo}}", "spec: {url: x, ref: {semver: \">=1.0.0\"}}", "GitRepository flux-system/podinfo", "spec.ref.semver", "semver"},
		{"short commit", "spec: {sourceRef: {kind: GitRepository, name: podinfo}}", "spec: {url: x, ref: {commit: abc123}}", "GitRepository flux-system/podinfo", "spec.ref.commit", "full commit"},
		{"include", "spec: {sourceRef: {kind: GitRepository, name: podinfo}}", "spec: {url: x, include: [{repository: {name: other}}]}", "GitRepository flux-system/podinfo", "spec.include", "included"},
		{"no url", "spec: {sourceRef: {kind: GitRepository, name: podinfo}}", "spec: {ref: {branch: main}}", "GitRepository flux-system/podinfo", "spec.url", "empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := mustKustomization(t, ksHeader+tc.ks)
			_, err := k.Source(mustGitRepository(t, repoHeader+tc.repo))
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Source error = %v, want a *FieldError", err)
			}
			if fe.Field != tc.field || fe.Object != tc.object {
				t.Errorf("FieldError names %q of %q, want %q of %q", fe.Field, fe.Object, tc.field, tc.object)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
	if _, err := mustKustomization(t, ksHeader+"spec: {sourceRef: {kind: GitRepository, name: podinfo}}").Source(nil); err == nil || !strings.Contains(err.Error(), "given none") {
		t.Errorf("Source(nil) = %v, want an error saying no GitRepository was given", err)
	}
}

func TestGitRefString(t *testing.T) {
	for _, tc := range []struct {
		ref  GitRef
		want string
	}{
		{GitRef{Branch: "main"}, "branch main"},
		{GitRef{Tag: "v1"}, "tag v1"},
		{GitRef{Name: "refs/heads/x"}, "ref refs/heads/x"},
		{GitRef{Commit: "abc"}, "commit abc"},
		{GitRef{Revision: "HEAD"}, "revision HEAD"},
	} {
		if got := tc.ref.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.ref, got, tc.want)
		}
	}
}
