// Package pinbot_test holds the module-wide layering test, after
// go-containerregistry's depcheck: the folder names promise an architecture,
// and this test keeps the imports honest to it.
package pinbot_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "pinbot.dev/pinbot"

// forbidden maps a package (and its subpackages) to import prefixes it must
// not depend on, directly or transitively. Keys are paths below the module:
// a top-level package or a subpackage ("reconciler/ssa"); a package obeys
// the rules of every key it lies under.
var forbidden = map[string][]string{
	"pins":       {"github.com/go-git/", "code.gitea.io/", "k8s.io/", "sigs.k8s.io/", "net/http", module + "/registry", module + "/gitforge", module + "/render"},
	"registry":   {"github.com/go-git/", "code.gitea.io/", "k8s.io/", "sigs.k8s.io/", module + "/pins", module + "/gitforge"},
	"gitforge":   {"k8s.io/", "sigs.k8s.io/", module + "/promote", module + "/reconciler", module + "/pins"},
	"promote":    {module + "/reconciler"},
	"reconciler": {module + "/promote"},
	"render":     {"github.com/go-git/", "code.gitea.io/", module + "/"},
	"deploy":     {"k8s.io/", module + "/"},
	// The Applier is a leaf: it applies what the reconciler decides. It
	// shares only the object reference type (see allowed).
	"reconciler/ssa": {module + "/"},
	// The deployer reader is a leaf too: pure decisions over Argo CD's and
	// Flux's objects, with no Kubernetes client of its own.
	"reconciler/deployer": {module + "/", "k8s.io/client-go/"},
	// The verdict core is pure: it reads a Snapshot and talks to no API
	// server, and it knows nothing of the rest of the reconciler.
	"reconciler/verdict": {"k8s.io/client-go/rest", "k8s.io/client-go/dynamic", "k8s.io/client-go/kubernetes",
		module + "/reconciler", module + "/gitforge", module + "/promote"},
	// The object reference is a leaf every reconciler package shares.
	"reconciler/object": {module + "/", "k8s.io/client-go/"},
}

// allowed are exceptions to forbidden: a package under the key may depend
// on these packages (and their subpackages) although a rule of the key
// forbids them.
var allowed = map[string][]string{
	"reconciler/ssa":     {module + "/reconciler/object"},
	"reconciler/verdict": {module + "/reconciler/object", module + "/registry", module + "/internal/imageref"},
}

// stdlibOnly are packages that may import nothing but the standard library
// (and themselves), so that every other package can share them.
var stdlibOnly = []string{"internal/imageref"}

// forbiddenDirect maps a package (and its subpackages) to import prefixes
// it must not import itself, though it may reach them through an allowed
// package: promote talks to no cluster, yet renders charts through render,
// which pulls Kubernetes types in; and it speaks no Git protocol itself,
// but works through gitforge, which holds go-git.
var forbiddenDirect = map[string][]string{
	"promote": {"k8s.io/", "sigs.k8s.io/", "helm.sh/", "github.com/go-git/"},
}

// testSupport are packages only tests, the demo, the benchmarks and the
// build tooling under hack/ (such as hack/image's image builder) may use.
// The product must not import "testing" itself either; that one is checked
// on direct imports only, because the Helm SDK's chart/common imports it
// (for testing.Testing()).
var testSupport = []string{module + "/internal/testenv", module + "/hack"}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func listDeps(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json=ImportPath,Imports,Deps", "./...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %s", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decoding go list output: %s", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func TestLayering(t *testing.T) {
	for _, p := range listDeps(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		top, _, _ := strings.Cut(rel, "/")
		for _, imp := range p.Imports {
			if imp == "testing" && isProduct(rel) {
				t.Errorf("%s imports testing", p.ImportPath)
			}
			for _, bad := range forbiddenDirect[top] {
				if strings.HasPrefix(imp, bad) {
					t.Errorf("%s imports %s; %s must not import %s itself", p.ImportPath, imp, top, bad)
				}
			}
		}
		for _, dep := range p.Deps {
			for key, bads := range forbidden {
				if !within(rel, key) {
					continue
				}
				for _, bad := range bads {
					if strings.HasPrefix(dep, bad) && !within(strings.TrimPrefix(dep, module+"/"), key) && !isAllowed(key, dep) {
						t.Errorf("%s imports %s; %s must not depend on %s", p.ImportPath, dep, key, bad)
					}
				}
			}
			if slices.Contains(stdlibOnly, rel) && !isStdlib(dep) {
				t.Errorf("%s imports %s; it may use only the standard library", p.ImportPath, dep)
			}
			if strings.HasPrefix(dep, module+"/cmd") && top != "cmd" {
				t.Errorf("%s imports %s; nothing may import the CLI", p.ImportPath, dep)
			}
			if isProduct(rel) {
				for _, ts := range testSupport {
					if dep == ts || strings.HasPrefix(dep, ts+"/") {
						t.Errorf("%s imports test support %s", p.ImportPath, dep)
					}
				}
			}
		}
	}
}

// isAllowed reports whether dep is an exception to key's rules (allowed).
func isAllowed(key, dep string) bool {
	for _, a := range allowed[key] {
		if dep == a || strings.HasPrefix(dep, a+"/") {
			return true
		}
	}
	return false
}

// isStdlib reports whether an import path belongs to the standard library,
// whose first element, unlike a module path's, holds no dot.
func isStdlib(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// within reports whether the package at rel (a path below the module) is
// key or one of its subpackages.
func within(rel, key string) bool {
	return rel == key || strings.HasPrefix(rel, key+"/")
}

// isProduct reports whether a package ships in the pinbot binary.
func isProduct(rel string) bool {
	return !strings.HasPrefix(rel, "hack/") && !strings.HasPrefix(rel, "internal/testenv") &&
		rel != ""
}
