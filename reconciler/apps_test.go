package reconciler

import (
	"slices"
	"testing"

	"pinbot.dev/pinbot/reconciler/config"
)

// TestSetAppsKeepsTheUnchanged: a change of the apps keeps the state
// (caches, loop) of every app whose definition is the same, and names
// the apps that start and stop: new ones, gone ones, and changed ones,
// which restart.
func TestSetAppsKeepsTheUnchanged(t *testing.T) {
	web := config.App{Name: "web", Repo: "http://gitea:3000/org/web.git", Branch: "main"}
	api := config.App{Name: "api", Repo: "http://gitea:3000/org/api.git", Branch: "main"}
	old := config.App{Name: "old", Repo: "http://gitea:3000/org/old.git", Branch: "main"}
	r := newOfflineReconciler(t, web, api, old)
	before := r.states()

	api2 := api
	api2.Branch = "release"
	added, removed := r.SetApps([]config.App{web, api2, {Name: "new", Repo: "http://gitea:3000/org/new.git", Branch: "main"}})
	if !slices.Equal(added, []string{"api", "new"}) || !slices.Equal(removed, []string{"api", "old"}) {
		t.Errorf("started %v, stopped %v; want [api new] and [api old]", added, removed)
	}
	after := r.states()
	if after["web"] != before["web"] {
		t.Error("web's state was replaced, though web did not change")
	}
	if after["api"] == before["api"] || after["old"] != nil || after["new"] == nil {
		t.Errorf("states after: %v", after)
	}
	if a, err := r.Config().App("api"); err != nil || a.Branch != "release" {
		t.Errorf("Config().App(api) = %+v, %v; want the new definition", a, err)
	}
	if _, err := r.Config().App("old"); err == nil {
		t.Error("the gone app is still in the config")
	}
}
