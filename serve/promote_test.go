package serve

import (
	"testing"

	"pinbot.dev/pinbot/reconciler/config"
)

func TestNewPromoter(t *testing.T) {
	forge := &config.ForgeConfig{URL: "https://gitea.example", TokenFile: "/t"}
	promote := []Target{{Repo: "platform/manifests", Images: []string{"gitea.example/platform/web"}}}
	for _, tc := range []struct {
		name string
		cfg  *Config
		want bool
	}{
		{"no forge", &Config{Promote: promote}, false},
		// The release chains of the apps' repositories need it too.
		{"no promote entries", &Config{Config: config.Config{Forge: forge}}, true},
		{"forge and promote entries", &Config{Config: config.Config{Forge: forge}, Promote: promote}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := newPromoter(tc.cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := p != nil; got != tc.want {
				t.Errorf("promoter made = %t, want %t", got, tc.want)
			}
		})
	}
}
