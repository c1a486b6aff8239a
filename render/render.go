// Package render turns a directory of a repository into the Kubernetes
// objects it declares: plain YAML or JSON manifests, a kustomization (built
// with kustomize, remote bases refused) or a Helm chart (rendered in process
// with the Helm SDK, dependencies only from the chart's charts/ directory).
//
// The repository is an io/fs file system (a Git snapshot, read from its
// objects with no checkout): rendering reads only what it holds, follows
// no symbolic link, reads regular files only and each at most MaxFile
// bytes, and never fetches anything. Errors are *Error naming the file,
// and the line or template, at fault.
package render

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/internal/confined"
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

// MaxFile bounds each file a render reads: no manifest is larger, and a
// hostile repository's huge file must not take the reconciler's memory.
// It is internal/confined's bound, the one every read of a repository
// keeps.
const MaxFile = confined.MaxFile

// FS returns the objects the manifests at rel (slash path) of the
// repository fsys declare:
//   - a directory holding a Chart.yaml is rendered as a Helm chart (see
//     WithHelm and WithCapabilities; dependencies only from its charts/,
//     lookup empty, test hooks left out);
//   - a directory holding a kustomization file is built with kustomize
//     (remote bases refused, files outside the repository unreadable);
//   - any other directory is read recursively, every *.yaml, *.yml and
//     *.json file, every document, skipping empty documents and
//     directories whose name starts with a dot.
//
// A chart or kustomization renders within MaxRenderTime and the context
// of WithContext. Objects come back in file order. Errors are *Error.
func FS(fsys fs.FS, rel string, opts ...Option) ([]*unstructured.Unstructured, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	rel = path.Clean(rel)
	if path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, &Error{File: rel, Err: errors.New("path escapes the repository")}
	}
	st, err := fs.Stat(fsys, rel)
	if err != nil {
		return nil, &Error{File: rel, Err: errors.New("no such directory in the repository")}
	}
	if !st.IsDir() {
		return nil, &Error{File: rel, Err: errors.New("not a directory")}
	}
	if isFile(fsys, path.Join(rel, chartFile)) {
		if len(o.overrides) > 0 {
			return nil, &Error{File: rel, Err: errors.New("kustomize overrides given, but the directory holds a Helm chart")}
		}
		return bounded(o, rel, func() ([]*unstructured.Unstructured, error) { return renderChart(fsys, rel, o) })
	}
	if len(o.overrides) > 0 {
		return bounded(o, rel, func() ([]*unstructured.Unstructured, error) { return renderOverrides(fsys, rel, o.overrides) })
	}
	if o.helm != nil {
		return nil, &Error{File: rel, Err: errors.New("helm settings given, but the directory holds no Chart.yaml")}
	}
	for _, name := range kustomizationNames {
		if isFile(fsys, path.Join(rel, name)) {
			return bounded(o, rel, func() ([]*unstructured.Unstructured, error) { return renderKustomize(fsys, rel, name) })
		}
	}
	return renderDir(fsys, rel)
}

// IsChart reports whether rel of fsys is a Helm chart directory.
func IsChart(fsys fs.FS, rel string) bool { return isFile(fsys, path.Join(rel, chartFile)) }

// ChartVersion is the version the Chart.yaml of the chart at rel declares.
func ChartVersion(fsys fs.FS, rel string) (string, error) {
	name := path.Join(rel, chartFile)
	b, err := readFile(fsys, name)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", name, err)
	}
	var c struct {
		Version string `json:"version"`
	}
	if err := sigsyaml.Unmarshal(b, &c); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if c.Version == "" {
		return "", fmt.Errorf("%s: no version", name)
	}
	return c.Version, nil
}

// isFile reports whether name is a regular file of fsys.
func isFile(fsys fs.FS, name string) bool {
	st, err := fs.Stat(fsys, name)
	return err == nil && st.Mode().IsRegular()
}

// readFile reads the regular file name of fsys, at most MaxFile bytes.
func readFile(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFile {
		return nil, fmt.Errorf("larger than %d MiB", MaxFile>>20)
	}
	return b, nil
}

// renderDir reads a plain manifest directory.
func renderDir(fsys fs.FS, rel string) ([]*unstructured.Unstructured, error) {
	var files []string
	err := fs.WalkDir(fsys, rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != rel && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // a symbolic link is never followed
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
		b, err := readFile(fsys, f)
		if err != nil {
			return nil, &Error{File: f, Err: fmt.Errorf("reading: %w", err)}
		}
		got, err := Decode(f, b)
		if err != nil {
			return nil, err
		}
		objs = append(objs, got...)
	}
	return objs, nil
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
		v, err := jsonable(&doc)
		if err != nil {
			return nil, &Error{File: file, Line: line, Err: err}
		}
		j, err := json.Marshal(v)
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

// MaxRenderTime bounds a chart's or a kustomization's render: templates
// are code from the repository, and one that loops must not hold a sync,
// or a shutdown, for ever.
const MaxRenderTime = time.Minute

// bounded runs render until it returns, MaxRenderTime passes or the
// options' context ends, whichever is first. Go's template engine cannot
// be interrupted: a render given up on finishes in the background, its
// result dropped, and the caller (a sync, a SIGTERM) moves on.
func bounded(o options, rel string, render func() ([]*unstructured.Unstructured, error)) ([]*unstructured.Unstructured, error) {
	ctx := o.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, MaxRenderTime)
	defer cancel()
	type result struct {
		objs []*unstructured.Unstructured
		err  error
	}
	done := make(chan result, 1)
	go func() {
		objs, err := render()
		done <- result{objs, err}
	}()
	select {
	case r := <-done:
		return r.objs, r.err
	case <-ctx.Done():
		why := context.Cause(ctx)
		if errors.Is(why, context.DeadlineExceeded) && o.ctx != nil && o.ctx.Err() == nil {
			why = fmt.Errorf("it took longer than %s", MaxRenderTime)
		}
		return nil, &Error{File: rel, Err: fmt.Errorf("render stopped: %w", why)}
	}
}
