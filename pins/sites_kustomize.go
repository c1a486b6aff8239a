package pins

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// kustomization records a site for each entry of a kustomization's images.
func (w *yamlWalker) kustomization(root *yaml.Node) {
	w.kustomizeImages(rootField(root, "images"))
}

// fluxKustomization records a site for each entry of the spec.images of a
// Flux Kustomization, which have kustomize's shape.
func (w *yamlWalker) fluxKustomization(root *yaml.Node) {
	f := fields(root, "apiVersion", "kind", "spec")
	api, kind := f.get("apiVersion"), f.get("kind")
	if api == nil || kind == nil || kind.Value != "Kustomization" || !strings.HasPrefix(api.Value, "kustomize.toolkit.fluxcd.io/") {
		return
	}
	if spec := f.get("spec"); spec != nil {
		w.kustomizeImages(rootField(spec, "images"))
	}
}

// kustomizeImages records a site for each entry of a kustomize images
// list: name (or newName) with newTag and digest; newTag "tag@sha256:...";
// newName "repo[:tag]@sha256:..."; name "repo:tag" with digest.
func (w *yamlWalker) kustomizeImages(images *yaml.Node) {
	if images == nil || images.Kind != yaml.SequenceNode {
		return
	}
	for _, e := range images.Content {
		if e.Kind != yaml.MappingNode {
			continue
		}
		f := fields(e, "name", "newName", "newTag", "digest")
		if !f.scalars() {
			continue
		}
		if nn := f.get("newName"); nn != nil && hasDigestRef(nn.Value) {
			w.refScalar(KindKustomize, nn, true, e.Line)
			continue
		}
		n := f.get("newName")
		if n == nil || n.Value == "" {
			n = f.get("name")
		}
		if n == nil {
			continue
		}
		if image, ok := parseRepo(n.Value, w.repos); ok {
			w.mappingSite(newSite(KindKustomize, image), e, &f, "newTag", "digest", []int{e.Line})
			continue
		}
		// name: repo:tag, with the digest under digest.
		r, ok := parseRef(n.Value, w.repos)
		if !ok || r.digOff >= 0 || r.tagOff < 0 || f.get("newTag") != nil {
			continue
		}
		off, ok := w.locate(n)
		if !ok {
			continue
		}
		s := newSite(KindKustomize, r.repo)
		s.tag, s.tagOff, s.tagLen = r.tag, off+r.tagOff, len(r.tag)
		w.mappingSite(s, e, &f, "newTag", "digest", []int{e.Line})
	}
}

// pinsFile records a site for each entry of a pins file.
func (w *yamlWalker) pinsFile(root *yaml.Node) {
	pins := rootField(root, "pins")
	if pins == nil || pins.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(pins.Content); i += 2 {
		k, e := pins.Content[i], pins.Content[i+1]
		if e.Kind != yaml.MappingNode {
			continue
		}
		f := fields(e, "image", "tag", "digest")
		img := f.get("image")
		if img == nil || !f.scalars() {
			continue
		}
		image, ok := parseRepo(img.Value, w.repos)
		if !ok {
			continue
		}
		w.mappingSite(newSite(KindPinsFile, image), e, &f, "tag", "digest", []int{k.Line})
	}
}
