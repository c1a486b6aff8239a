package cli

import (
	"testing"

	"pinbot.dev/pinbot/reconciler"
)

func TestWebhookOptions(t *testing.T) {
	forge := &reconciler.ForgeConfig{URL: "https://gitea.example", TokenFile: "/t"}
	promote := []reconciler.PromoteTarget{{Repo: "platform/manifests", Images: []string{"gitea.example/platform/web"}}}
	for _, tc := range []struct {
		name string
		cfg  *reconciler.Config
		want int
	}{
		{"no forge", &reconciler.Config{Promote: promote}, 0},
		{"no promote entries", &reconciler.Config{Forge: forge}, 0},
		{"forge and promote entries", &reconciler.Config{Forge: forge, Promote: promote}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := len(webhookOptions(tc.cfg)); got != tc.want {
				t.Errorf("webhookOptions gave %d options, want %d", got, tc.want)
			}
		})
	}
}
