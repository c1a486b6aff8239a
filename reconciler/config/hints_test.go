package config

import (
	"strings"
	"testing"
)

// TestArgoCDHabitsGetAHint: keys written as in an Argo CD Application fail
// with the line, and say what pinbot's config writes instead.
func TestArgoCDHabitsGetAHint(t *testing.T) {
	const app = "apps:\n  - name: web\n    repo: https://git.example/o/r.git\n    namespace: web\n"
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"automated, flow", app + "    syncPolicy: {automated: {prune: true}}\n", "c.yaml:5: cannot unmarshal !!map into bool (syncPolicy.automated is true or false here; Argo CD's automated: {prune, selfHeal} are syncPolicy.prune and syncPolicy.selfHeal)"},
		{"automated, block", app + "    syncPolicy:\n      automated:\n        prune: true\n        selfHeal: true\n", "c.yaml:7: cannot unmarshal !!map into bool (syncPolicy.automated"},
		{"syncOptions", app + "    syncPolicy:\n      syncOptions: [CreateNamespace=true]\n", `c.yaml:6: unknown field "syncOptions" (pinbot has no syncOptions`},
		{"destination", app + "    destination: {namespace: web}\n", `c.yaml:5: unknown field "destination" (an app names its namespace itself`},
		{"targetRevision", app + "    targetRevision: main\n", `unknown field "targetRevision" (the branch pinbot follows is branch:)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	// Another key's error gets no hint.
	_, err := Parse("c.yaml", []byte("interval: [1]\n"+app))
	if err == nil || strings.Contains(err.Error(), "(") {
		t.Errorf("interval: [1]: %v, want an error without a hint", err)
	}
}
