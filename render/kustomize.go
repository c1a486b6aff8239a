package render

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// renderKustomize builds the kustomization at rel/file. Before building, it
// walks every local kustomization the root reaches and refuses remote
// entries in resources, bases and components, so kustomize never clones or
// downloads. The build reads through a file system that refuses any path
// outside root, even through a symlink.
func renderKustomize(root, rel, file string) ([]*unstructured.Unstructured, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, &Error{File: rel, Err: fmt.Errorf("locating the repository: %w", err)}
	}
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, &Error{File: rel, Err: fmt.Errorf("locating the repository: %w", err)}
	}
	if err := checkKustomization(abs, rel, map[string]bool{}); err != nil {
		return nil, err
	}
	fsys := &repoFS{FileSystem: filesys.MakeFsOnDisk(), root: abs}
	opts := krusty.MakeDefaultOptions()
	m, err := krusty.MakeKustomizer(opts).Run(fsys, filepath.Join(abs, filepath.FromSlash(rel)))
	if err != nil {
		return nil, &Error{File: path.Join(rel, file), Err: fmt.Errorf("kustomize build: %w", err)}
	}
	var objs []*unstructured.Unstructured
	for _, r := range m.Resources() {
		j, err := r.MarshalJSON()
		if err != nil {
			return nil, &Error{File: path.Join(rel, file), Err: fmt.Errorf("encoding %s: %w", r.CurId(), err)}
		}
		got, err := objectsFromJSON(j)
		if err != nil {
			return nil, &Error{File: path.Join(rel, file), Err: err}
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// kustomizationRefs are the kustomization fields that name other
// kustomizations or resource files.
var kustomizationRefs = map[string]bool{"resources": true, "bases": true, "components": true}

// checkKustomization refuses remote references in the kustomization in dir
// (slash path relative to root) and in every local kustomization it
// references, and references that leave root or do not exist.
func checkKustomization(root, dir string, seen map[string]bool) error {
	if seen[dir] {
		return nil
	}
	seen[dir] = true
	file := ""
	var data []byte
	for _, name := range kustomizationNames {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(dir), name))
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
			st, err := os.Stat(filepath.Join(root, filepath.FromSlash(target)))
			if err != nil {
				return &Error{File: file, Line: item.Line, Err: fmt.Errorf("%q not found in the repository", ref)}
			}
			if st.IsDir() {
				if err := checkKustomization(root, target, seen); err != nil {
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

// repoFS is the on-disk file system restricted to reads under root.
type repoFS struct {
	filesys.FileSystem
	root string // absolute, symlinks resolved
}

var errOutside = errors.New("outside the repository")

// inside returns an error unless p, with symlinks resolved, lies under root.
func (f *repoFS) inside(p string) error {
	abs, err := filepath.Abs(p)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	if abs != f.root && !strings.HasPrefix(abs, f.root+string(filepath.Separator)) {
		return fmt.Errorf("%s: %w", p, errOutside)
	}
	return nil
}

func (f *repoFS) Create(p string) (filesys.File, error) { return nil, fmt.Errorf("%s: read-only", p) }
func (f *repoFS) Mkdir(p string) error                  { return fmt.Errorf("%s: read-only", p) }
func (f *repoFS) MkdirAll(p string) error               { return fmt.Errorf("%s: read-only", p) }
func (f *repoFS) RemoveAll(p string) error              { return fmt.Errorf("%s: read-only", p) }
func (f *repoFS) WriteFile(p string, _ []byte) error    { return fmt.Errorf("%s: read-only", p) }

func (f *repoFS) Open(p string) (filesys.File, error) {
	if err := f.inside(p); err != nil {
		return nil, err
	}
	return f.FileSystem.Open(p)
}

func (f *repoFS) ReadFile(p string) ([]byte, error) {
	if err := f.inside(p); err != nil {
		return nil, err
	}
	return f.FileSystem.ReadFile(p)
}

func (f *repoFS) ReadDir(p string) ([]string, error) {
	if err := f.inside(p); err != nil {
		return nil, err
	}
	return f.FileSystem.ReadDir(p)
}

func (f *repoFS) IsDir(p string) bool { return f.inside(p) == nil && f.FileSystem.IsDir(p) }
func (f *repoFS) Exists(p string) bool {
	return f.inside(p) == nil && f.FileSystem.Exists(p)
}

func (f *repoFS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	if err := f.inside(p); err != nil {
		return "", "", err
	}
	return f.FileSystem.CleanedAbs(p)
}

func (f *repoFS) Glob(pattern string) ([]string, error) {
	all, err := f.FileSystem.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var in []string
	for _, p := range all {
		if f.inside(p) == nil {
			in = append(in, p)
		}
	}
	return in, nil
}

func (f *repoFS) Walk(p string, fn filepath.WalkFunc) error {
	if err := f.inside(p); err != nil {
		return err
	}
	return f.FileSystem.Walk(p, fn)
}
