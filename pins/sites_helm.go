package pins

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// helm records a site for a mapping shaped like Helm image values. The
// shapes real charts use:
//
//   - repository, with an optional registry: {registry, repository, tag,
//     digest};
//   - the repository under "image" (ingress-nginx: {registry, image, tag,
//     digest});
//   - the registry from the values' global section when the mapping has
//     none, or over it (global.imageRegistry, global.image.registry,
//     global.registry; see globalRegistry);
//   - the digest under "digest", "sha256" or "sha", as "sha256:<hex>" or
//     as the bare hex the templates prefix themselves.
//
// A mapping of the promoted repository that cannot be pinned in place is
// recorded too, with the reason (see site.unplaced), so that it is
// reported, never dropped in silence.
func (w *yamlWalker) helm(m *yaml.Node, key *yaml.Node) {
	f := fields(m, "registry", "repository", "image", "tag", "digest", "sha256", "sha")
	repo := f.get("repository")
	if repo == nil {
		repo = f.get("image")
	}
	digName := "digest"
	for _, n := range []string{"digest", "sha256", "sha"} {
		if f.get(n) != nil {
			digName = n
			break
		}
	}
	if repo == nil || repo.Kind != yaml.ScalarNode || f.get("tag") == nil && f.get(digName) == nil {
		return
	}
	names, ok := w.helmNames(repo.Value, f.get("registry"))
	if !ok {
		return
	}
	var extra []int
	if key != nil {
		extra = append(extra, key.Line)
	}
	s := newSite(KindHelm, names[0])
	if len(names) > 1 {
		s.alts = names[1:]
	}
	if !f.scalars() {
		s.line, s.col = repo.Line, repo.Column
		s.unplaced = "the image's tag or digest is not a plain value (a mapping or a list): pin it by hand"
		w.sites = append(w.sites, s)
		return
	}
	s.digBare = digName != "digest"
	w.mappingSite(s, m, &f, "tag", digName, extra)
}

// helmNames returns the image a Helm mapping names (a repository, maybe
// with the mapping's registry and the values' global one), the name the
// chart most likely renders first, then other names it may render: charts
// differ in whether the global registry overrides the image's own.
func (w *yamlWalker) helmNames(repo string, reg *yaml.Node) ([]string, bool) {
	if strings.ContainsAny(repo, "@{}") || strings.Contains(repo, ":") && !strings.Contains(repo, "/") {
		return nil, false
	}
	local := ""
	if reg != nil && reg.Kind == yaml.ScalarNode && !isNull(reg) {
		local = strings.TrimSuffix(reg.Value, "/")
	}
	var candidates []string
	switch g := w.global; {
	case g.override != "":
		candidates = []string{g.override, local, ""}
	case local != "":
		candidates = []string{local, g.fallback}
	case g.fallback != "":
		candidates = []string{g.fallback, ""}
	default:
		candidates = []string{""}
	}
	var out []string
	for _, r := range candidates {
		full := repo
		if r != "" {
			full = r + "/" + repo
		} else if len(out) > 0 && local != "" {
			continue // only a global registry may stand in for none
		}
		if name, ok := parseRepo(full, w.repos); ok && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, len(out) > 0
}

// globals are the registries a values file's global section sets for
// every image: override wins over an image's own registry
// (global.imageRegistry, as Bitnami's charts read it), fallback stands in
// where the image names none (global.image.registry, global.registry).
type globals struct{ override, fallback string }

// globalRegistry reads a document's global registries.
func globalRegistry(root *yaml.Node) globals {
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	g := rootField(root, "global")
	if g == nil || g.Kind != yaml.MappingNode {
		return globals{}
	}
	scalar := func(n *yaml.Node) string {
		if n == nil || n.Kind != yaml.ScalarNode || isNull(n) {
			return ""
		}
		return strings.TrimSuffix(n.Value, "/")
	}
	var out globals
	out.override = scalar(rootField(g, "imageRegistry"))
	if img := rootField(g, "image"); img != nil && img.Kind == yaml.MappingNode {
		out.fallback = scalar(rootField(img, "registry"))
	}
	if out.fallback == "" {
		out.fallback = scalar(rootField(g, "registry"))
	}
	return out
}
