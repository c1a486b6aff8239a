// Package feeds checks that each wave of a release chain is a separable
// change in Git: a pin a wave's kustomizations read from outside the
// wave's own paths (a shared base, another wave's overlay) moves with
// another wave's promotion, or with none, never with the wave's own.
package feeds

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"pinbot.dev/pinbot/pins"
	"pinbot.dev/pinbot/promote"
)

// Problem is one reference of a wave's kustomization, at File and Line,
// to pinned files outside the wave.
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) Error() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// refKeys are the kustomization fields that name files or directories a
// kustomization reads (patches: by each entry's path).
var refKeys = []string{"resources", "bases", "components", "patchesStrategicMerge", "patches"}

// kustomizations are the names kustomize reads a directory's
// kustomization from.
var kustomizations = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// Check reads the kustomizations under each wave's paths in fsys, and
// follows what they read: every pinned file (of found, pins.ScanFS's)
// reached outside the wave's own paths is a Problem at the reference
// that reads it, naming the file, its images and every wave it feeds,
// unless the wave's own files pin those images too (an images: entry of
// its overlay, which the render takes instead).
func Check(fsys fs.FS, c promote.Config, found []pins.Pin) []Problem {
	pinned := map[string][]string{} // file → images
	for _, p := range found {
		if !p.Ignored && !slices.Contains(pinned[p.File], p.Image) {
			pinned[p.File] = append(pinned[p.File], p.Image)
		}
	}
	own := map[string][]string{} // wave → the images its own files pin
	for f, images := range pinned {
		own[c.TargetOf(f)] = append(own[c.TargetOf(f)], images...)
	}
	type reach struct {
		file, wave string
		images     []string // what the file pins that the wave's own files do not override
		ref        Problem  // where the wave's own kustomization reads it
	}
	var reached []reach
	_ = fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !slices.Contains(kustomizations, d.Name()) {
			return nil
		}
		wave := c.TargetOf(name)
		if e, ok := c.Environments.Get(wave); !ok || e.Wave == "" {
			return nil
		}
		for _, r := range refs(fsys, name, map[string]bool{}) {
			for f := range pinned {
				if f != r.path && !strings.HasPrefix(f, r.path+"/") || c.TargetOf(f) == wave {
					continue
				}
				// An image the wave's own files pin too (an images: entry
				// of its overlay) renders as the wave's pin.
				if images := slices.DeleteFunc(slices.Clone(pinned[f]), func(im string) bool { return slices.Contains(own[wave], im) }); len(images) > 0 {
					reached = append(reached, reach{file: f, wave: wave, images: images, ref: r.at})
				}
			}
		}
		return nil
	})
	var out []Problem
	for _, r := range reached {
		var waves []string
		for _, o := range reached {
			if o.file == r.file && !slices.Contains(waves, o.wave) {
				waves = append(waves, o.wave)
			}
		}
		p := r.ref
		p.Msg = fmt.Sprintf("wave %s reads %s, which pins %s outside the wave's paths and feeds %s: a promotion of the wave cannot move it alone; pin the image in each wave's own files (an images: entry in its overlay)",
			r.wave, r.file, strings.Join(r.images, ", "), strings.Join(waves, " and "))
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// ref is a path a kustomization reads, and the reference in the wave's
// own kustomization that leads to it.
type ref struct {
	path string
	at   Problem
}

// refs are the local paths the kustomization file reads, directly or
// through the kustomizations of the directories it names (seen breaks
// cycles), each with the reference of file that leads to it.
func refs(fsys fs.FS, file string, seen map[string]bool) []ref {
	if seen[file] {
		return nil
	}
	seen[file] = true
	data, err := fs.ReadFile(fsys, file)
	var doc yaml.Node
	if err != nil || yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	var out []ref
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, val := m.Content[i].Value, m.Content[i+1]
		if val.Kind != yaml.SequenceNode || !slices.Contains(refKeys, key) {
			continue
		}
		for _, item := range val.Content {
			n := item
			if key == "patches" {
				n = field(item, "path")
			}
			if n == nil || n.Kind != yaml.ScalarNode || strings.Contains(n.Value, "://") || strings.Contains(n.Value, "?ref=") {
				continue
			}
			p := path.Clean(path.Join(path.Dir(file), n.Value))
			if p == ".." || strings.HasPrefix(p, "../") {
				continue
			}
			at := Problem{File: file, Line: n.Line}
			out = append(out, ref{path: p, at: at})
			for _, k := range kustomizations {
				for _, deeper := range refs(fsys, path.Join(p, k), seen) {
					out = append(out, ref{path: deeper.path, at: at})
				}
			}
		}
	}
	return out
}

// field is the value of key in mapping n, or nil.
func field(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
