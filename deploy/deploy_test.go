package deploy

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
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
	for path := range objects(t) {
		if !listed[path] {
			t.Errorf("kustomization.yaml does not list %s", path)
		}
	}
}

// TestImagesArePinnedByDigest holds pinbot to its own rule.
func TestImagesArePinnedByDigest(t *testing.T) {
	for _, path := range []string{"reconciler.yaml", "drift-cronjob.yaml"} {
		b, err := Manifests.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if s := strings.TrimSpace(line); strings.HasPrefix(s, "image:") && !strings.Contains(s, "@sha256:") {
				t.Errorf("%s:%d: image not pinned by digest: %s", path, i+1, s)
			}
		}
	}
}
