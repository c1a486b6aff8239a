package render

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/yaml"
)

// WithOverrides renders the directory with a deployer's kustomize
// overrides: fields of a kustomization.yaml (images, namePrefix,
// nameSuffix, namespace, commonLabels, commonAnnotations, replicas,
// patches) that Argo CD's spec.source.kustomize or a Flux Kustomization
// adds on top of what the repository holds. As the deployers do, a
// directory with a kustomization is built beneath an overlay that holds
// them, and a plain directory gets a kustomization listing its manifests
// with them. A chart takes none.
func WithOverrides(fields map[string]any) Option {
	return func(o *options) { o.overrides = fields }
}

// overlayDir is where the overrides' kustomization goes, beside repoRoot.
const overlayDir = "/pinbot-overrides"

// renderOverrides builds rel of fsys beneath the overrides.
func renderOverrides(fsys fs.FS, rel string, overrides map[string]any) ([]*unstructured.Unstructured, error) {
	k := map[string]any{"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
	for key, v := range overrides {
		if key == "resources" || key == "apiVersion" || key == "kind" {
			continue
		}
		k[key] = v
	}
	root, file := overlayDir, "the deployer's overrides"
	// A kustomization the directory already has stays as it is.
	hasKustomization := false
	for _, name := range kustomizationNames {
		if isFile(fsys, path.Join(rel, name)) {
			hasKustomization = true
			if err := checkKustomization(fsys, rel, map[string]bool{}); err != nil {
				return nil, err
			}
		}
	}
	if hasKustomization {
		k["resources"] = []string{".." + path.Join(repoRoot, rel)}
	} else {
		// As Flux does for a directory without one: a kustomization in
		// the directory, listing its manifests.
		root = path.Join(repoRoot, rel)
		files, err := manifestFiles(fsys, rel)
		if err != nil {
			return nil, &Error{File: rel, Err: err}
		}
		var res []string
		for _, f := range files {
			r := strings.TrimPrefix(f, rel+"/")
			if rel == "." {
				r = f
			}
			res = append(res, r)
		}
		k["resources"] = res
	}
	mem, err := inMemory(fsys)
	if err != nil {
		return nil, &Error{File: rel, Err: err}
	}
	b, err := yaml.Marshal(k)
	if err != nil {
		return nil, &Error{File: rel, Err: fmt.Errorf("%s: %w", file, err)}
	}
	if err := mem.MkdirAll(root); err != nil {
		return nil, &Error{File: rel, Err: err}
	}
	if err := mem.WriteFile(path.Join(root, "kustomization.yaml"), b); err != nil {
		return nil, &Error{File: rel, Err: err}
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, root)
	if err != nil {
		msg := strings.ReplaceAll(strings.ReplaceAll(err.Error(), repoRoot+"/", ""), overlayDir+"/", "")
		return nil, &Error{File: rel, Err: fmt.Errorf("kustomize build with %s: %s", file, msg)}
	}
	return objectsOf(m, rel)
}

// manifestFiles lists the manifests renderDir reads, in its order.
func manifestFiles(fsys fs.FS, rel string) ([]string, error) {
	var files []string
	err := fs.WalkDir(fsys, rel, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p != rel && strings.HasPrefix(d.Name(), "."):
			return fs.SkipDir
		case d.IsDir() || !d.Type().IsRegular() || strings.HasPrefix(d.Name(), "."):
			return nil
		}
		for _, ext := range manifestExts {
			if strings.HasSuffix(d.Name(), ext) {
				files = append(files, p)
				break
			}
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}
