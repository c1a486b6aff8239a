package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/reconciler/deployer"
)

func TestParseVerifyOnly(t *testing.T) {
	config := `forge: {url: https://gitea.example}
apps:
  - name: guestbook
    argocd: {application: guestbook, namespace: argocd}
  - name: podinfo
    flux: {kustomization: podinfo}
    auth: {tokenFile: /etc/pinbot/token}
`
	got, err := Parse("c.yaml", []byte(config))
	if err != nil {
		t.Fatalf("Parse: %s", err)
	}
	g, p := got.Apps[0], got.Apps[1]
	if diff := cmp.Diff(&deployer.ArgoCDApp{Application: "guestbook", Namespace: "argocd"}, g.ArgoCD); diff != "" {
		t.Errorf("argocd (-want +got):\n%s", diff)
	}
	if ns, name := p.Flux.Object(); ns != deployer.DefaultFluxNamespace || name != "podinfo" {
		t.Errorf("flux object = %s/%s, want flux-system/podinfo", ns, name)
	}
	for _, a := range []App{g, p} {
		if !a.VerifyOnly() || a.Repo != "" || a.Branch != "" || len(a.AllowNamespaces) != 0 {
			t.Errorf("app %s: verify-only %t, repo %q, branch %q, allowNamespaces %v; want verify-only with no defaults of pinbot's own apps", a.Name, a.VerifyOnly(), a.Repo, a.Branch, a.AllowNamespaces)
		}
	}
	if g.Deployer() != deployer.ArgoCD || p.Deployer() != deployer.Flux {
		t.Errorf("deployers = %s, %s", g.Deployer(), p.Deployer())
	}
}

func TestParseVerifyOnlyErrors(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         []string // substrings of the error
	}{
		{"repo path branch next to argocd", `apps:
  - name: web
    argocd:
      application: web
    repo: https://g.example/o/r.git
    path: deploy
    branch: main
`, []string{
			`c.yaml:5: app "web": repo: not allowed next to argocd:`,
			`c.yaml:6: app "web": path: not allowed next to argocd:`,
			`c.yaml:7: app "web": branch: not allowed next to argocd:`,
		}},
		{"both deployers", "apps:\n  - name: web\n    argocd: {application: web}\n    flux: {kustomization: web}\n",
			[]string{`c.yaml:4: app "web": flux: an app has one deployer`}},
		{"missing application", "apps:\n  - name: web\n    argocd:\n      namespace: argocd\n",
			[]string{`c.yaml:3: app "web": argocd.application: required`}},
		{"bad kustomization name", "apps:\n  - name: web\n    flux:\n      kustomization: Web_1\n",
			[]string{`c.yaml:4: app "web": flux.kustomization: "Web_1": want a Kubernetes object name`}},
		{"bad namespace", "apps:\n  - name: web\n    argocd:\n      application: web\n      namespace: Argo_CD\n",
			[]string{`c.yaml:5: app "web": argocd.namespace: "Argo_CD": want a namespace name`}},
		{"sync policy that applies", "apps:\n  - name: web\n    argocd: {application: web}\n    syncPolicy: {automated: true}\n",
			[]string{`c.yaml:4: app "web": syncPolicy: an app next to argocd: is verify-only`}},
		{"helm next to flux", "apps:\n  - name: web\n    flux: {kustomization: web}\n    helm: {releaseName: web}\n",
			[]string{`c.yaml:4: app "web": helm: not allowed next to flux:`}},
		{"namespace next to argocd", "apps:\n  - name: web\n    argocd: {application: web}\n    namespace: web\n",
			[]string{`c.yaml:4: app "web": namespace: not allowed next to argocd:`}},
		{"unknown via", "apps:\n  - name: web\n    argocd: {application: web, via: grpc}\n",
			[]string{`c.yaml:3: app "web": argocd.via: "grpc": want kubernetes or api`}},
		{"via api without the server", "apps:\n  - name: web\n    argocd: {application: web, via: api}\n",
			[]string{`c.yaml:2: app "web": reads its Pods through Argo CD's API (via: api), which needs argocd.url and argocd.tokenFile`}},
		{"global via api without a token", "argocd: {url: 'https://argocd.example', via: api}\napps:\n  - name: web\n    argocd: {application: web}\n",
			[]string{`c.yaml:1: argocd: via api needs url and tokenFile`}},
		{"cluster next to argocd", "apps:\n  - name: web\n    argocd: {application: web}\n    cluster: {kubeConfig: {secretRef: {name: spoke}}}\n",
			[]string{`c.yaml:4: app "web": cluster: names where pinbot applies; a verify-only app's cluster is its argocd object's`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.config))
			if err == nil {
				t.Fatalf("Parse succeeded, want error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestArgoCDVia: an app's via: wins over the config's argocd.via, which
// wins over reading the cluster; apps that are not Argo CD's have none.
func TestArgoCDVia(t *testing.T) {
	c, err := Parse("c.yaml", []byte(`argocd: {url: 'https://argocd.example', tokenFile: t, via: api}
apps:
  - {name: a, argocd: {application: a}}
  - {name: b, argocd: {application: b, via: kubernetes}}
  - {name: c, flux: {kustomization: c}}
`))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{deployer.ViaAPI, deployer.ViaKubernetes, ""} {
		if got := c.ArgoCDVia(&c.Apps[i]); got != want {
			t.Errorf("app %s: via %q, want %q", c.Apps[i].Name, got, want)
		}
	}
	c.ArgoCD = nil
	if got := c.ArgoCDVia(&c.Apps[0]); got != deployer.ViaKubernetes {
		t.Errorf("with no argocd: block, via %q, want kubernetes", got)
	}
}
