package ignore

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/reconciler/object"
)

func TestKeepIgnored(t *testing.T) {
	web := object.Ref{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	git := func() map[string]any {
		return map[string]any{"spec": map[string]any{
			"replicas": int64(3), "paused": false,
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "app", "image": "app:git"}, map[string]any{"name": "proxy", "image": "proxy:git"}}}},
		}}
	}
	live := map[string]any{"spec": map[string]any{
		"replicas": int64(1),
		"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "app", "image": "app:live"}, map[string]any{"name": "proxy", "image": "proxy:live"}}}},
	}}
	for _, tc := range []struct {
		name  string
		rules []Rule
		want  func(map[string]any)
	}{
		{"no rule", nil, func(map[string]any) {}},
		{"replicas keep their live value", []Rule{{Object: "apps/Deployment/web", Pointers: []string{"/spec/replicas"}}},
			func(o map[string]any) { o["spec"].(map[string]any)["replicas"] = int64(1) }},
		{"a field live lacks is left out", []Rule{{Object: "apps/Deployment/web", Pointers: []string{"/spec/paused"}}},
			func(o map[string]any) { delete(o["spec"].(map[string]any), "paused") }},
		{"every image", []Rule{{Object: "apps/*/web", Pointers: []string{"/spec/template/spec/containers/*/image"}}},
			func(o map[string]any) {
				cs := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
				cs[0].(map[string]any)["image"], cs[1].(map[string]any)["image"] = "app:live", "proxy:live"
			}},
		{"another object's rule", []Rule{{Object: "apps/Deployment/api", Pointers: []string{"/spec/replicas"}}}, func(map[string]any) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, want := git(), git()
			tc.want(want)
			Keep(got, live, tc.rules, web)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("applied object (-want +got):\n%s", diff)
			}
		})
	}
	if strings.Contains(live["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"].(string), "git") {
		t.Error("keepIgnored changed the live object")
	}
}
