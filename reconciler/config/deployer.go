package config

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"pinbot.dev/pinbot/reconciler/deployer"
)

// VerifyOnly reports whether Argo CD or Flux deploys the app (an `argocd:`
// or `flux:` block): pinbot then only proves what runs (verifyonly.go).
func (a *App) VerifyOnly() bool { return a.ArgoCD != nil || a.Flux != nil }

// Deployer names who deploys the app: deployer.ArgoCD, deployer.Flux or
// deployer.Pinbot.
func (a *App) Deployer() deployer.Kind {
	switch {
	case a.ArgoCD != nil:
		return deployer.ArgoCD
	case a.Flux != nil:
		return deployer.Flux
	}
	return deployer.Pinbot
}

// DeployerObject names the object whose status says what a verify-only
// app's deployer did: its Application, HelmRelease or Kustomization.
func (a *App) DeployerObject() (res schema.GroupVersionResource, ns, name string, ok bool) {
	switch {
	case a.ArgoCD != nil:
		ns, name = a.ArgoCD.Object()
		return deployer.ApplicationsResource, ns, name, true
	case a.Flux != nil && a.Flux.HelmRelease != "":
		ns, name = a.Flux.Object()
		return deployer.HelmReleasesResource, ns, name, true
	case a.Flux != nil:
		ns, name = a.Flux.Object()
		return deployer.KustomizationsResource, ns, name, true
	}
	return res, "", "", false
}

// lineProblem is one config problem and the line of the key at fault.
type lineProblem struct {
	line int
	msg  string
}

// deployerProblems checks the `argocd:` or `flux:` block of a verify-only
// app with deployer.Validate, each problem on the line of its key. Keys
// that say where pinbot writes (namespace, allowNamespaces) are refused
// too: a verify-only app writes nowhere, and the deployer's object names
// the destination namespace.
func (a *App) deployerProblems() []lineProblem {
	if !a.VerifyOnly() {
		return nil
	}
	sp := a.SyncPolicy
	errs := deployer.Validate(deployer.AppConfig{
		ArgoCD: a.ArgoCD, Flux: a.Flux,
		Repo: a.Repo, Path: a.Path, Branch: a.Branch,
		Helm:    keyNode(a.node, "helm") != nil,
		Applies: sp.Automated || sp.SelfHeal || sp.Prune,
	})
	var out []lineProblem
	for _, e := range errs {
		out = append(out, lineProblem{line: a.keyLine(e.Field), msg: e.Error()})
	}
	block := string(a.Deployer())
	for _, key := range []string{"namespace", "allowNamespaces"} {
		if keyNode(a.node, key) != nil {
			out = append(out, lineProblem{line: a.keyLine(key), msg: fmt.Sprintf("%s: not allowed next to %s: (pinbot applies nothing for a verify-only app; the deployer's object names the destination namespace)", key, block)})
		}
	}
	return out
}

// keyLine is the line of the dotted key ("argocd.application") in the
// app's mapping: the deepest part found, else the app's own line.
func (a *App) keyLine(dotted string) int {
	line, n := a.line, a.node
	for _, part := range strings.Split(dotted, ".") {
		k := keyNode(n, part)
		if k == nil {
			break
		}
		line = k.Line
		n = valueNode(n, part)
	}
	return line
}

// keyNode is the key node of key in mapping n, or nil.
func keyNode(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i]
		}
	}
	return nil
}

// valueNode is the value node of key in mapping n, or nil.
func valueNode(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
