package config

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/loopback"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler/deployer"
)

// Validate reports every problem in the config, each naming file:line.
func (c *Config) Validate() error {
	var errs []error
	add := func(line int, format string, args ...any) {
		where := c.file
		if line > 0 {
			where = fmt.Sprintf("%s:%d", c.file, line)
		}
		errs = append(errs, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...)))
	}
	if c.Interval != 0 && time.Duration(c.Interval) < time.Second {
		add(KeyLine(c.root, "interval"), "interval %s: want at least 1s", time.Duration(c.Interval))
	}
	if c.StateNamespace != "" && !dnsLabel(c.StateNamespace) {
		add(KeyLine(c.root, "stateNamespace"), "stateNamespace %s: not a valid namespace name", clip.Quote(c.StateNamespace))
	}
	for i, m := range c.Mirrors {
		for _, f := range []struct{ key, v string }{{"from", m.From}, {"to", m.To}} {
			if _, err := mirrorPrefix(f.v); err != nil {
				add(KeyLine(c.root, "mirrors"), "mirrors[%d].%s %s: want a registry host or repository prefix (%v)", i, f.key, clip.Quote(f.v), err)
			}
		}
	}
	if c.Forge != nil {
		line := KeyLine(c.root, "forge", "url")
		if line == 0 {
			line = KeyLine(c.root, "forge")
		}
		u, err := url.Parse(c.Forge.URL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			add(line, "forge.url %s: want an http(s) URL", clip.Quote(redact.URL(c.Forge.URL)))
		case u.User != nil:
			add(line, "forge.url %s: put no credentials in the URL; use forge.tokenFile", clip.Quote(redact.URL(c.Forge.URL)))
		case loopback.Cleartext(u) && !c.Forge.Insecure:
			add(line, "forge.url %s: plain HTTP to a host that is not loopback would send the token in clear; use https, or set forge.insecure: true", clip.Quote(c.Forge.URL))
		}
	}
	for _, p := range c.Signatures.Validate() {
		keys := []any{"signatures", p.Index}
		add(KeyLine(c.root, append(keys, p.Path...)...), "%s", p.Error())
	}
	if len(c.Apps) == 0 && len(c.Discover) == 0 {
		add(0, "no apps (list apps:, or select them with discover:)")
	}
	for i, d := range c.Discover {
		for _, msg := range d.problems() {
			add(KeyLine(c.root, "discover", i), "discover[%d]: %s", i, msg)
		}
	}
	if s := c.ArgoCD; s != nil {
		if v := s.Via; v != "" && v != deployer.ViaKubernetes && v != deployer.ViaAPI {
			add(KeyLine(c.root, "argocd", "via"), "argocd.via %s: want %s or %s", clip.Quote(v), deployer.ViaKubernetes, deployer.ViaAPI)
		}
		if s.Via == deployer.ViaAPI && (s.URL == "" || s.TokenFile == "") {
			add(KeyLine(c.root, "argocd"), "argocd: via api needs url and tokenFile")
		}
	}
	seen := map[string]bool{}
	for _, a := range c.Apps {
		if c.ArgoCDVia(&a) == deployer.ViaAPI && (c.ArgoCD == nil || c.ArgoCD.URL == "" || c.ArgoCD.TokenFile == "") {
			add(a.line, "app %s: reads its Pods through Argo CD's API (via: api), which needs argocd.url and argocd.tokenFile in this config", clip.Quote(a.Name))
		}
		for _, msg := range a.problems() {
			add(a.line, "app %s: %s", clip.Quote(a.Name), msg)
		}
		for _, p := range a.deployerProblems() {
			add(p.line, "app %s: %s", clip.Quote(a.Name), p.msg)
		}
		if a.Cluster != nil && a.VerifyOnly() {
			add(a.keyLine("cluster"), "app %s: cluster: names where pinbot applies; a verify-only app's cluster is its %s object's", clip.Quote(a.Name), a.Deployer())
		} else if a.Cluster != nil && !dnsSubdomain(a.Cluster.KubeConfig.SecretRef.Name) {
			add(a.keyLine("cluster.kubeConfig.secretRef.name"), "app %s: cluster.kubeConfig.secretRef.name %s: want a Secret's name", clip.Quote(a.Name), clip.Quote(a.Cluster.KubeConfig.SecretRef.Name))
		}
		if a.VerifySignatures && a.VerifyOnly() {
			add(a.line, "app %s: verifySignatures checks what pinbot applies, and a verify-only app applies nothing (its deployer does)", clip.Quote(a.Name))
		}
		if a.VerifySignatures && len(c.Signatures) == 0 {
			add(a.line, "app %s: verifySignatures needs a signatures: policy in this config", clip.Quote(a.Name))
		}
		if seen[a.Name] {
			add(a.line, "app %s: defined twice", clip.Quote(a.Name))
		}
		seen[a.Name] = true
	}
	return errors.Join(errs...)
}

// problems lists what is wrong with one app.
func (a *App) problems() []string {
	var p []string
	if !dnsLabel(a.Name) {
		p = append(p, "name: want a DNS-1123 label (lowercase letters, digits, '-')")
	}
	if a.VerifyOnly() {
		return p // the deployer's object names the rest (deployerProblems)
	}
	if u, err := url.Parse(a.Repo); a.Repo == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file") {
		p = append(p, fmt.Sprintf("repo %s: want an http, https or file URL", clip.Quote(a.Repo)))
	}
	if clean := path.Clean(a.Path); path.IsAbs(a.Path) || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(a.Path, "\\") {
		p = append(p, fmt.Sprintf("path %s: want a relative path inside the repository", clip.Quote(a.Path)))
	}
	if !dnsLabel(a.Namespace) {
		p = append(p, fmt.Sprintf("namespace %s: want a namespace name", clip.Quote(a.Namespace)))
	}
	if len(a.AllowNamespaces) > 0 && !slices.Contains(a.AllowNamespaces, a.Namespace) {
		p = append(p, fmt.Sprintf("namespace %s is not in allowNamespaces %v", clip.Quote(a.Namespace), a.AllowNamespaces))
	}
	for _, ns := range a.AllowNamespaces {
		if !dnsLabel(ns) {
			p = append(p, fmt.Sprintf("allowNamespaces: %s is not a namespace name", clip.Quote(ns)))
		}
	}
	for _, k := range a.AllowClusterScoped {
		if k != "*" && (k == "" || strings.Count(k, "/") > 1 || strings.HasSuffix(k, "/")) {
			p = append(p, fmt.Sprintf("allowClusterScoped: %s: want Kind, group/Kind or *", clip.Quote(k)))
		}
	}
	if a.VerifyTimeout < 0 {
		p = append(p, "verifyTimeout: want a positive duration")
	}
	if a.WaveTimeout < 0 {
		p = append(p, "waveTimeout: want a positive duration")
	}
	if a.DriftWar.Limit < 0 || a.DriftWar.Window < 0 {
		p = append(p, "driftWar: want a positive limit and window")
	}
	p = append(p, a.Helm.problems()...)
	for i, r := range a.Ignore {
		if parts := strings.Split(r.Object, "/"); r.Object == "" || len(parts) < 2 || len(parts) > 3 {
			p = append(p, fmt.Sprintf("ignore[%d].object: want group/Kind/name or Kind/name, got %s", i, clip.Quote(r.Object)))
		}
		if len(r.Pointers) == 0 {
			p = append(p, fmt.Sprintf("ignore[%d].pointers: want at least one JSON pointer such as /spec/replicas", i))
		}
		for _, ptr := range r.Pointers {
			if !strings.HasPrefix(ptr, "/") {
				p = append(p, fmt.Sprintf("ignore[%d].pointers: %s is not a JSON pointer (it starts with /)", i, clip.Quote(ptr)))
			}
		}
	}
	return p
}
