package reconciler

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWarGuard(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	web := ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	api := ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "api"}
	replicas := func(ref ObjectRef) Drift {
		return Drift{Object: ref, Path: "spec.replicas", Pointer: "/spec/replicas"}
	}
	// step is one event at t0+at: a heal attempt (want: allowed?), or
	// "settle"/"reset" of web.
	type step struct {
		at   time.Duration
		op   string // "heal web", "heal api", "settle", "reset"
		want bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
		war   bool // web at war at the end
	}{
		{"within the limit", []step{{0, "heal web", true}, {time.Second, "heal web", true}}, false},
		{"one more drift within the window trips it", []step{
			{0, "heal web", true}, {time.Second, "heal web", true}, {2 * time.Second, "heal web", false}}, true},
		{"heals older than the window do not count", []step{
			{0, "heal web", true}, {time.Second, "heal web", true}, {61 * time.Second, "heal web", true}}, false},
		{"the window slides", []step{
			{0, "heal web", true}, {50 * time.Second, "heal web", true}, {70 * time.Second, "heal web", true}, {80 * time.Second, "heal web", false}}, true},
		{"a war lasts past the window", []step{
			{0, "heal web", true}, {time.Second, "heal web", true}, {2 * time.Second, "heal web", false}, {time.Hour, "heal web", false}}, true},
		{"objects are counted apart", []step{
			{0, "heal web", true}, {time.Second, "heal web", true}, {2 * time.Second, "heal api", true}}, false},
		{"found clean, then drifting again after the window", []step{
			{0, "heal web", true}, {time.Second, "heal web", true}, {2 * time.Second, "heal web", false},
			{3 * time.Second, "settle", false}, {time.Hour, "heal web", true}}, false},
		{"found clean, but the window is still full", []step{
			{0, "heal web", true}, {time.Second, "heal web", true}, {2 * time.Second, "heal web", false},
			{3 * time.Second, "settle", false}, {4 * time.Second, "heal web", false}}, true},
		{"Git changed the object", []step{
			{0, "heal web", true}, {time.Second, "heal web", true}, {2 * time.Second, "heal web", false},
			{3 * time.Second, "reset", false}, {4 * time.Second, "heal web", true}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g warGuard
			var got, want []bool
			for _, s := range tc.steps {
				switch s.op {
				case "heal web":
					got, want = append(got, g.allow(replicas(web), t0.Add(s.at), 2, time.Minute)), append(want, s.want)
				case "heal api":
					got, want = append(got, g.allow(replicas(api), t0.Add(s.at), 2, time.Minute)), append(want, s.want)
				case "settle":
					g.settle(web)
				case "reset":
					g.reset(web)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("heals allowed (-want +got):\n%s", diff)
			}
			if g.atWar(web) != tc.war {
				t.Errorf("at war = %t, want %t (%q)", g.atWar(web), tc.war, g.war())
			}
		})
	}

	var g warGuard
	for i := range 4 {
		g.allow(replicas(web), t0.Add(time.Duration(i)*time.Second), 3, 10*time.Minute)
	}
	want := "drift war on Deployment shop/web field spec.replicas: another controller keeps changing it " +
		"(healed 3 times within 10m0s; add an ignore rule {object: apps/Deployment/web, pointers: [/spec/replicas]} or change Git)"
	if got := g.war(); got != want {
		t.Errorf("war message\n got %q\nwant %q", got, want)
	}
}

func TestKeepIgnored(t *testing.T) {
	web := ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
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
		rules []IgnoreRule
		want  func(map[string]any)
	}{
		{"no rule", nil, func(map[string]any) {}},
		{"replicas keep their live value", []IgnoreRule{{Object: "apps/Deployment/web", Pointers: []string{"/spec/replicas"}}},
			func(o map[string]any) { o["spec"].(map[string]any)["replicas"] = int64(1) }},
		{"a field live lacks is left out", []IgnoreRule{{Object: "apps/Deployment/web", Pointers: []string{"/spec/paused"}}},
			func(o map[string]any) { delete(o["spec"].(map[string]any), "paused") }},
		{"every image", []IgnoreRule{{Object: "apps/*/web", Pointers: []string{"/spec/template/spec/containers/*/image"}}},
			func(o map[string]any) {
				cs := o["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
				cs[0].(map[string]any)["image"], cs[1].(map[string]any)["image"] = "app:live", "proxy:live"
			}},
		{"another object's rule", []IgnoreRule{{Object: "apps/Deployment/api", Pointers: []string{"/spec/replicas"}}}, func(map[string]any) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, want := git(), git()
			tc.want(want)
			keepIgnored(got, live, tc.rules, web)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("applied object (-want +got):\n%s", diff)
			}
		})
	}
	if strings.Contains(live["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["image"].(string), "git") {
		t.Error("keepIgnored changed the live object")
	}
}
