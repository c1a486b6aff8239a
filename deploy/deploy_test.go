package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
// kustomization itself.
func objects(t *testing.T) map[string][]object {
	t.Helper()
	out := map[string][]object{}
	err := fs.WalkDir(Manifests, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path == "kustomization.yaml" {
			return err
		}
		b, err := Manifests.ReadFile(path)
		if err != nil {
			return err
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var o object
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %s", path, err)
			}
			out[path] = append(out[path], o)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestManifestsAreWellFormed(t *testing.T) {
	clusterScoped := map[string]bool{"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true}
	for path, objs := range objects(t) {
		for _, o := range objs {
			if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
				t.Errorf("%s: object without apiVersion, kind or name: %+v", path, o)
			}
			if !clusterScoped[o.Kind] && o.Metadata.Namespace == "" {
				t.Errorf("%s: %s/%s has no namespace", path, o.Kind, o.Metadata.Name)
			}
		}
	}
}

// optional are the manifests kustomization.yaml must not list: grants a
// user adds when they need them (see the file's comment).
var optional = map[string]bool{"rbac-deployers.yaml": true, "rbac-argocd-clusters.yaml": true}

func TestKustomizationListsEveryManifest(t *testing.T) {
	b, err := Manifests.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `yaml:"resources"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, r := range k.Resources {
		listed[r] = true
	}
	files := objects(t)
	for path := range files {
		if listed[path] == optional[path] {
			t.Errorf("kustomization.yaml lists %s: %v, want %v (optional files stay out)", path, listed[path], !optional[path])
		}
	}
	for path := range optional {
		if files[path] == nil {
			t.Errorf("optional manifest %s is missing", path)
		}
	}
}

// build runs `kustomize build deploy` in process on the embedded files,
// with the optional manifests named in with added to its resources as a
// user would add them.
func build(t *testing.T, with ...string) resmap.ResMap {
	t.Helper()
	fsys := filesys.MakeFsInMemory()
	err := fs.WalkDir(Manifests, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := Manifests.ReadFile(path)
		if err != nil {
			return err
		}
		if path == "kustomization.yaml" {
			for _, o := range with {
				if !optional[o] {
					return fmt.Errorf("%s is not an optional manifest", o)
				}
				b = bytes.Replace(b, []byte("resources:\n"), []byte("resources:\n  - "+o+"\n"), 1)
			}
		}
		return fsys.WriteFile("/deploy/"+path, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, "/deploy")
	if err != nil {
		t.Fatalf("kustomize build deploy: %s", err)
	}
	return m
}

// TestImagesArePinnedByDigest holds pinbot to its own rule: the manifests
// name pinbot's image "pinbot", kustomization.yaml's images: entry pins it by
// digest, and every container of `kustomize build deploy` runs an image
// pinned by a real (not all-zero) digest.
func TestImagesArePinnedByDigest(t *testing.T) {
	pinned := regexp.MustCompile(`^[^@\s]+@sha256:[0-9a-f]{64}$`)
	containers := 0
	for _, r := range build(t).Resources() {
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
