package feeds

import (
	"strings"
	"testing"
	"testing/fstest"

	"pinbot.dev/pinbot/pins"
	"pinbot.dev/pinbot/promote"
)

const chain = `environments:
  - name: prod
    waves:
      - {name: canary, paths: ["envs/eu-1/**"], apps: [web-eu-1]}
      - {name: rest, paths: ["envs/us-1/**"], apps: [web-us-1]}
`

const (
	digest     = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: registry.example/org/web@" + digest + "\n"
	unpinned   = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: registry.example/org/web\n"
	overlay    = "resources: [../../base]\nimages:\n  - {name: registry.example/org/web, digest: " + digest + "}\n"
)

// TestAWaveIsASeparableChange: a wave whose kustomization reads a pinned
// file outside its own paths (a shared base, directly or through another
// kustomization, or another wave's file) is named at the reference that
// reads it, with every wave the file feeds; waves that pin the image in
// their own overlays, reading an unpinned base, are not.
func TestAWaveIsASeparableChange(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"each wave pins in its overlay", map[string]string{
			"base/kustomization.yaml": "resources: [deploy.yaml]\n", "base/deploy.yaml": unpinned,
			"envs/eu-1/kustomization.yaml": overlay, "envs/us-1/kustomization.yaml": overlay,
		}, nil},
		{"each overlay overrides a pinned base", map[string]string{
			"base/kustomization.yaml": "resources: [deploy.yaml]\n", "base/deploy.yaml": deployment,
			"envs/eu-1/kustomization.yaml": overlay, "envs/us-1/kustomization.yaml": overlay,
		}, nil},
		{"a pinned base feeds both waves", map[string]string{
			"base/kustomization.yaml": "resources: [deploy.yaml]\n", "base/deploy.yaml": deployment,
			"envs/eu-1/kustomization.yaml": "resources: [../../base]\n", "envs/us-1/kustomization.yaml": "namePrefix: us-\nresources:\n  - ../../base\n",
		}, []string{
			"envs/eu-1/kustomization.yaml:1: wave prod.canary reads base/deploy.yaml, which pins registry.example/org/web outside the wave's paths and feeds prod.canary and prod.rest",
			"envs/us-1/kustomization.yaml:3: wave prod.rest reads base/deploy.yaml",
		}},
		{"through another kustomization", map[string]string{
			"base/kustomization.yaml": "resources: [../common]\n", "common/kustomization.yaml": "resources: [web.yaml]\n", "common/web.yaml": deployment,
			"envs/eu-1/kustomization.yaml": "resources: [../../base]\n", "envs/us-1/kustomization.yaml": overlay,
		}, []string{"envs/eu-1/kustomization.yaml:1: wave prod.canary reads common/web.yaml, which pins registry.example/org/web outside the wave's paths and feeds prod.canary:"}},
		{"another wave's file, by a patch", map[string]string{
			"envs/eu-1/deploy.yaml": deployment, "envs/eu-1/kustomization.yaml": "resources: [deploy.yaml]\n",
			"envs/us-1/kustomization.yaml": "resources: [../eu-1]\npatches:\n  - path: ../eu-1/deploy.yaml\n",
		}, []string{"envs/us-1/kustomization.yaml:1: wave prod.rest reads envs/eu-1/deploy.yaml", "envs/us-1/kustomization.yaml:3: wave prod.rest reads envs/eu-1/deploy.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := promote.ParseConfig(".pinbot.yaml", []byte(chain))
			if err != nil {
				t.Fatal(err)
			}
			fsys := fstest.MapFS{}
			for name, body := range tc.files {
				fsys[name] = &fstest.MapFile{Data: []byte(body)}
			}
			found, err := pins.ScanFS(fsys)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range Check(fsys, c, found) {
				got = append(got, p.Error())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("problems:\n%s\nwant %d", strings.Join(got, "\n"), len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("problem %d:\n%s\nwant it to start %q", i, got[i], w)
				}
			}
		})
	}
}
