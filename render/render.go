// Package render turns a directory of a Git checkout into the Kubernetes
// objects it declares: plain YAML or JSON manifests, a kustomization (built
// with kustomize, remote bases refused) or a Helm chart (rendered in process
// with the Helm SDK, dependencies only from the chart's charts/ directory).
// Rendering reads only the checkout; it never fetches anything. Errors are
// *Error naming the file, and the line or template, at fault.
package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

// Error stops a sync before anything is applied. File is the slash path,
// relative to the repository root, of the file at fault.
type Error struct {
	File string
	Line int // 0 when unknown
	Err  error
}

// Error names the object or file and the cause.
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("render: %s:%d: %s", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("render: %s: %s", e.File, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// manifestExts are the file name suffixes a plain directory render reads.
var manifestExts = []string{".yaml", ".yml", ".json"}

// kustomizationNames are the files that make a directory a kustomization.
var kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// Dir returns the objects the manifests at rel (slash path) inside the
// repository checked out at root declare:
//   - a directory holding a Chart.yaml is rendered as a Helm chart (see
//     WithHelm and WithCapabilities; dependencies only from its charts/,
//     lookup empty, test hooks left out);
//   - a directory holding a kustomization file is built with kustomize
//     (remote bases refused, files outside root unreadable);
//   - any other directory is read recursively, every *.yaml, *.yml and
//     *.json file, every document, skipping empty documents and
//     directories whose name starts with a dot.
//
// Objects come back in file order. Errors are *Error.
func Dir(root, rel string, opts ...Option) ([]*unstructured.Unstructured, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	rel = path.Clean(rel)
	if path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, &Error{File: rel, Err: errors.New("path escapes the repository")}
	}
	dir := filepath.Join(root, filepath.FromSlash(rel))
	st, err := os.Stat(dir)
	if err != nil {
		return nil, &Error{File: rel, Err: errors.New("no such directory in the repository")}
	}
	if !st.IsDir() {
		return nil, &Error{File: rel, Err: errors.New("not a directory")}
	}
	if _, err := os.Stat(filepath.Join(dir, chartFile)); err == nil {
		return renderChart(root, rel, o)
	}
	if o.helm != nil {
		return nil, &Error{File: rel, Err: errors.New("helm settings given, but the directory holds no Chart.yaml")}
	}
	for _, name := range kustomizationNames {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return renderKustomize(root, rel, name)
		}
	}
	return renderDir(root, rel)
}

// renderDir reads a plain manifest directory.
func renderDir(root, rel string) ([]*unstructured.Unstructured, error) {
	var files []string
	base := filepath.Join(root, filepath.FromSlash(rel))
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != base && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		for _, ext := range manifestExts {
			if strings.HasSuffix(d.Name(), ext) && !strings.HasPrefix(d.Name(), ".") {
				files = append(files, p)
				break
			}
		}
		return nil
	})
	if err != nil {
		return nil, &Error{File: rel, Err: fmt.Errorf("walking: %w", err)}
	}
	sort.Strings(files)
	var objs []*unstructured.Unstructured
	for _, f := range files {
		name := filepath.ToSlash(mustRel(root, f))
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, &Error{File: name, Err: fmt.Errorf("reading: %w", err)}
		}
		got, err := Decode(name, b)
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

func mustRel(root, p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return r
}

// Decode parses every document of one manifest file (YAML, multi-document,
// or JSON). Empty documents are skipped; a List's items are expanded. Every
// object needs apiVersion, kind and metadata.name. Errors are *Error naming
// file and line.
func Decode(file string, data []byte) ([]*unstructured.Unstructured, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var objs []*unstructured.Unstructured
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			line, msg := splitYAMLLine(err)
			return nil, &Error{File: file, Line: line, Err: errors.New(msg)}
		}
		if empty(&doc) {
			continue
		}
		line := doc.Line
		if len(doc.Content) > 0 {
			line = doc.Content[0].Line
		}
		if doc.Content[0].Kind != yaml.MappingNode {
			return nil, &Error{File: file, Line: line, Err: errors.New("document is not a mapping")}
		}
		y, err := yaml.Marshal(&doc)
		if err != nil {
			return nil, &Error{File: file, Line: line, Err: fmt.Errorf("re-encoding: %w", err)}
		}
		j, err := sigsyaml.YAMLToJSON(y)
		if err != nil {
			return nil, &Error{File: file, Line: line, Err: fmt.Errorf("converting to JSON: %w", err)}
		}
		got, err := objectsFromJSON(j)
		if err != nil {
			return nil, &Error{File: file, Line: line, Err: err}
		}
		objs = append(objs, got...)
	}
}

// empty reports whether a decoded document holds nothing (only comments,
// "---" or null).
func empty(doc *yaml.Node) bool {
	if len(doc.Content) == 0 {
		return true
	}
	n := doc.Content[0]
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// yamlLine matches yaml.v3's "line N: msg" errors.
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// splitYAMLLine pulls the line out of a yaml.v3 syntax error.
func splitYAMLLine(err error) (int, string) {
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, err.Error()
	}
	var line int
	fmt.Sscanf(m[1], "%d", &line)
	return line, m[2]
}

// objectsFromJSON turns one JSON document into objects, expanding Lists.
func objectsFromJSON(j []byte) ([]*unstructured.Unstructured, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(j, &head); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if head.APIVersion == "" {
		return nil, errors.New("object has no apiVersion")
	}
	if head.Kind == "" {
		return nil, errors.New("object has no kind")
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if u.IsList() {
		list, err := u.ToList()
		if err != nil {
			return nil, fmt.Errorf("reading %s items: %w", u.GetKind(), err)
		}
		var objs []*unstructured.Unstructured
		for i := range list.Items {
			item := &list.Items[i]
			if err := checkObject(item); err != nil {
				return nil, fmt.Errorf("%s item %d: %w", u.GetKind(), i, err)
			}
			objs = append(objs, item)
		}
		return objs, nil
	}
	if err := checkObject(u); err != nil {
		return nil, err
	}
	return []*unstructured.Unstructured{u}, nil
}

func checkObject(u *unstructured.Unstructured) error {
	switch {
	case u.GetAPIVersion() == "":
		return errors.New("object has no apiVersion")
	case u.GetKind() == "":
		return errors.New("object has no kind")
	case u.GetName() == "":
		return fmt.Errorf("%s has no metadata.name", u.GetKind())
	}
	return nil
}
