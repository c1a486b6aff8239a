package reconciler

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployer"
)

func TestFollowing(t *testing.T) {
	r := newOfflineReconciler(t,
		config.App{Name: "web", Repo: "http://gitea:3000/org/app.git", Branch: "main"},
		config.App{Name: "web-staging", Repo: "http://gitea:3000/org/app", Branch: "staging"},
		config.App{Name: "api", Repo: "https://Gitea.Example.com/org/api/", Branch: "main"},
		config.App{Name: "creds", Repo: "https://bot:tok@gitea.example.com/org/api.git", Branch: "main"},
		config.App{Name: "local", Repo: "file:///srv/git/app", Branch: "main"},
		config.App{Name: "vo", ArgoCD: &deployer.ArgoCDApp{Application: "vo"}},
	)
	// A verify-only app follows what its deployer's object named at its
	// last pass.
	r.states()["vo"].track(config.App{Name: "vo", Repo: "http://gitea:3000/org/deployed.git", Branch: "main"})
	for _, tc := range []struct {
		name   string
		branch string
		urls   []string
		want   []string
	}{
		{"clone URL", "main", []string{"http://gitea:3000/org/app.git", ""}, []string{"web"}},
		{"web URL", "main", []string{"", "http://gitea:3000/org/app/"}, []string{"web"}},
		{"either URL", "main", []string{"http://gitea:3000/org/other.git", "http://gitea:3000/org/app/"}, []string{"web"}},
		{"other branch", "staging", []string{"http://gitea:3000/org/app.git"}, []string{"web-staging"}},
		{"unfollowed branch", "feature", []string{"http://gitea:3000/org/app.git"}, nil},
		{"no branch (a tag)", "", []string{"http://gitea:3000/org/app.git"}, nil},
		{"host case and credentials ignored", "main", []string{"https://gitea.example.COM/org/api.git"}, []string{"api", "creds"}},
		{"path case matters", "main", []string{"http://gitea:3000/Org/App.git"}, nil},
		{"scheme matters", "main", []string{"https://gitea:3000/org/app.git"}, nil},
		{"other repo", "main", []string{"http://gitea:3000/org/app2.git"}, nil},
		{"a verify-only app by its deployer's repository", "main", []string{"http://gitea:3000/org/deployed"}, []string{"vo"}},
		{"prefix is not a match", "main", []string{"http://gitea:3000/org"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, r.Following(tc.branch, tc.urls...)); diff != "" {
				t.Errorf("Following (-want +got):\n%s", diff)
			}
		})
	}
}
