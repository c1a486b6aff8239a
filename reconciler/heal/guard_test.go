package heal

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/reconciler/diff"
	"pinbot.dev/pinbot/reconciler/object"
)

func TestWarGuard(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	web := object.Ref{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	api := object.Ref{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "api"}
	replicas := func(ref object.Ref) diff.Field {
		return diff.Field{Object: ref, Path: "spec.replicas", Pointer: "/spec/replicas"}
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
			var g Guard
			var got, want []bool
			for _, s := range tc.steps {
				switch s.op {
				case "heal web":
					got, want = append(got, g.Allow(replicas(web), t0.Add(s.at), 2, time.Minute)), append(want, s.want)
				case "heal api":
					got, want = append(got, g.Allow(replicas(api), t0.Add(s.at), 2, time.Minute)), append(want, s.want)
				case "settle":
					g.Settle(web)
				case "reset":
					g.Reset(web)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("heals allowed (-want +got):\n%s", diff)
			}
			if g.AtWar(web) != tc.war {
				t.Errorf("at war = %t, want %t (%q)", g.AtWar(web), tc.war, g.War())
			}
		})
	}

	var g Guard
	for i := range 4 {
		g.Allow(replicas(web), t0.Add(time.Duration(i)*time.Second), 3, 10*time.Minute)
	}
	want := "drift war on Deployment shop/web field spec.replicas: another controller keeps changing it " +
		"(healed 3 times within 10m0s; add an ignore rule {object: apps/Deployment/web, pointers: [/spec/replicas]} or change Git)"
	if got := g.War(); got != want {
		t.Errorf("war message\n got %q\nwant %q", got, want)
	}
}
