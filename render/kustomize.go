package render

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// renderKustomize builds the kustomization at rel/file. Before building, it
// walks every local kustomization the root reaches and refuses remote
// entries in resources, bases and components, so kustomize never clones or
// downloads. kustomize builds from a file system in memory holding the
// repository's regular files, so it reads nothing else.
func renderKustomize(fsys fs.FS, rel, file string) ([]*unstructured.Unstructured, error) {
	if err := checkKustomization(fsys, rel, map[string]bool{}); err != nil {
		return nil, err
	}
	mem, err := inMemory(fsys)
	if err != nil {
		return nil, &Error{File: rel, Err: err}
	}
	opts := krusty.MakeDefaultOptions()
	m, err := krusty.MakeKustomizer(opts).Run(mem, path.Join(repoRoot, rel))
	if err != nil {
		// kustomize names files by their place in memory: name them by the
		// repository's.
		return nil, &Error{File: path.Join(rel, file), Err: fmt.Errorf("kustomize build: %s", strings.ReplaceAll(err.Error(), repoRoot+"/", ""))}
	}
	return objectsOf(m, path.Join(rel, file))
}

// objectsOf are the objects of a kustomize build of file.
func objectsOf(m resmap.ResMap, file string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, r := range m.Resources() {
		j, err := r.MarshalJSON()
		if err != nil {
			return nil, &Error{File: file, Err: fmt.Errorf("encoding %s: %w", r.CurId(), err)}
		}
		got, err := objectsFromJSON(j)
		if err != nil {
			return nil, &Error{File: file, Err: err}
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// repoRoot is where inMemory puts the repository.
const repoRoot = "/repo"

// inMemory copies the regular files of fsys into kustomize's in-memory
// file system under repoRoot: kustomize then reads only the repository.
func inMemory(fsys fs.FS) (filesys.FileSystem, error) {
	mem := filesys.MakeFsInMemory()
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && d.Name() == ".git":
			return fs.SkipDir
		case d.IsDir():
			return mem.MkdirAll(path.Join(repoRoot, p))
		case !d.Type().IsRegular():
			return nil // a symbolic link is never followed
		}
		b, err := readFile(fsys, p)
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		return mem.WriteFile(path.Join(repoRoot, p), b)
	})
	return mem, err
}

// kustomizationRefs are the kustomization fields that name other
// kustomizations or resource files.
var kustomizationRefs = map[string]bool{"resources": true, "bases": true, "components": true}

// checkKustomization refuses remote references in the kustomization in dir
// (slash path relative to root) and in every local kustomization it
// references, and references that leave root or do not exist.
func checkKustomization(fsys fs.FS, dir string, seen map[string]bool) error {
	if seen[dir] {
		return nil
	}
	seen[dir] = true
	file := ""
	var data []byte
	for _, name := range kustomizationNames {
		b, err := readFile(fsys, path.Join(dir, name))
		if err == nil {
			file, data = path.Join(dir, name), b
			break
		}
	}
	if file == "" {
		return nil // a plain resource directory; kustomize reports it
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line, msg := splitYAMLLine(err)
		return &Error{File: file, Line: line, Err: errors.New(msg)}
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil // empty or malformed; kustomize reports it
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if !kustomizationRefs[m.Content[i].Value] || m.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		for _, item := range m.Content[i+1].Content {
			ref := item.Value
			if remoteRef(ref) {
				return &Error{File: file, Line: item.Line, Err: fmt.Errorf("remote %s %q refused: pinbot renders only what the repository holds", m.Content[i].Value, ref)}
			}
			target := path.Clean(path.Join(dir, ref))
			if path.IsAbs(ref) || target == ".." || strings.HasPrefix(target, "../") {
				return &Error{File: file, Line: item.Line, Err: fmt.Errorf("%q is outside the repository", ref)}
			}
			st, err := fs.Lstat(fsys, target)
			switch {
			case err != nil:
				return &Error{File: file, Line: item.Line, Err: fmt.Errorf("%q not found in the repository", ref)}
			case st.Mode()&fs.ModeSymlink != 0:
				return &Error{File: file, Line: item.Line, Err: fmt.Errorf("%q is a symbolic link: pinbot follows no link in a repository, so nothing outside it is read", ref)}
			}
			if st.IsDir() {
				if err := checkKustomization(fsys, target, seen); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// remoteRef reports whether a kustomization entry names something outside
// the repository: a URL, a git remote spec or a hosted-repository path, all
// forms kustomize would clone or download.
func remoteRef(ref string) bool {
	if strings.Contains(ref, "://") || strings.Contains(ref, "?ref=") || strings.Contains(ref, "?version=") ||
		strings.Contains(ref, "_git/") || strings.Contains(ref, ".git/") || strings.HasSuffix(ref, ".git") ||
		strings.Contains(ref, "//") {
		return true
	}
	for _, p := range []string{"git@", "git::", "gh:", "github.com/", "gitlab.com/", "bitbucket.org/"} {
		if strings.HasPrefix(ref, p) {
			return true
		}
	}
	return false
}
