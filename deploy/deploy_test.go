package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

type object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"metadata"`
}

// objects decodes every document of every manifest except the
// kustomizations and the files a configMapGenerator reads.
func objects(t *testing.T) map[string][]object {
	t.Helper()
	out := map[string][]object{}
	err := fs.WalkDir(Manifests, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Base(p) == "kustomization.yaml" || generated[p] {
			return err
		}
		b, err := Manifests.ReadFile(p)
		if err != nil {
			return err
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var o object
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %s", p, err)
			}
			out[p] = append(out[p], o)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// generated are the files a configMapGenerator reads: data, not objects.
var generated = map[string]bool{"overlays/example/reconciler.yaml": true}

func TestManifestsAreWellFormed(t *testing.T) {
	clusterScoped := map[string]bool{"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true, "ValidatingWebhookConfiguration": true, "CustomResourceDefinition": true}
	for p, objs := range objects(t) {
		for _, o := range objs {
			if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
				t.Errorf("%s: object without apiVersion, kind or name: %+v", p, o)
			}
			if !clusterScoped[o.Kind] && o.Metadata.Namespace == "" {
				t.Errorf("%s: %s/%s has no namespace", p, o.Kind, o.Metadata.Name)
			}
		}
	}
}

// TestKustomizationsListEveryManifest holds each directory's
// kustomization.yaml to its files: each manifest is listed as a resource
// of its own directory, so none is shipped and never applied.
func TestKustomizationsListEveryManifest(t *testing.T) {
	listed := map[string]bool{}
	err := fs.WalkDir(Manifests, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || path.Base(p) != "kustomization.yaml" {
			return err
		}
		b, err := Manifests.ReadFile(p)
		if err != nil {
			return err
		}
		var k struct {
			Resources []string `yaml:"resources"`
		}
		if err := yaml.Unmarshal(b, &k); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, r := range k.Resources {
			listed[path.Join(path.Dir(p), r)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range objects(t) {
		if !listed[p] {
			t.Errorf("%s is listed in no kustomization.yaml's resources", p)
		}
	}
}

// build runs `kustomize build deploy/DIR` in process on the embedded
// files.
func build(t *testing.T, dir string) resmap.ResMap {
	t.Helper()
	return buildWith(t, dir, nil)
}

// buildWith is build with extra files (path under deploy/: content), as a
// user's own overlay next to the shipped ones.
func buildWith(t *testing.T, dir string, extra map[string]string) resmap.ResMap {
	t.Helper()
	fsys := filesys.MakeFsInMemory()
	for p, content := range extra {
		if err := fsys.WriteFile("/deploy/"+p, []byte(content)); err != nil {
			t.Fatal(err)
		}
	}
	err := fs.WalkDir(Manifests, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := Manifests.ReadFile(p)
		if err != nil {
			return err
		}
		return fsys.WriteFile("/deploy/"+p, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, "/deploy/"+dir)
	if err != nil {
		t.Fatalf("kustomize build deploy/%s: %s", dir, err)
	}
	return m
}

// TestBaseStaysInItsNamespace: the base writes nothing in a namespace it
// does not create, so it applies to a fresh cluster, and an upgrade of it
// touches no namespace of the user's.
func TestBaseStaysInItsNamespace(t *testing.T) {
	created := map[string]bool{}
	m := build(t, "base")
	for _, r := range m.Resources() {
		if r.GetKind() == "Namespace" {
			created[r.GetName()] = true
		}
	}
	for _, r := range m.Resources() {
		if ns := r.GetNamespace(); ns != "" && !created[ns] {
			t.Errorf("the base writes %s %s in namespace %q, which it does not create", r.GetKind(), r.GetName(), ns)
		}
	}
}

// TestImagesArePinnedByDigest holds pinbot to its own rule: the manifests
// name pinbot's image "pinbot", kustomization.yaml's images: entry pins it by
// digest, and every container of `kustomize build deploy` runs an image
// pinned by a real (not all-zero) digest.
func TestImagesArePinnedByDigest(t *testing.T) {
	pinned := regexp.MustCompile(`^[^@\s]+@sha256:[0-9a-f]{64}$`)
	containers := 0
	for _, r := range build(t, "overlays/example").Resources() {
		obj, err := r.Map()
		if err != nil {
			t.Fatalf("%s/%s: %s", r.GetKind(), r.GetName(), err)
		}
		for _, path := range [][]string{
			{"spec", "template", "spec"},
			{"spec", "jobTemplate", "spec", "template", "spec"},
		} {
			for _, field := range []string{"initContainers", "containers"} {
				for _, c := range nestedList(obj, append(slices.Clone(path), field)) {
					containers++
					image, _ := c.(map[string]any)["image"].(string)
					if !pinned.MatchString(image) || strings.HasSuffix(image, strings.Repeat("0", 64)) {
						t.Errorf("%s/%s: image not pinned by a real digest: %q", r.GetKind(), r.GetName(), image)
					}
				}
			}
		}
	}
	if containers == 0 {
		t.Fatal("kustomize build deploy holds no containers")
	}
}

// nestedList returns the list at path in obj, or nil.
func nestedList(obj map[string]any, path []string) []any {
	var v any = obj
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	list, _ := v.([]any)
	return list
}
