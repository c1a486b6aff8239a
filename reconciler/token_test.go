package reconciler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pinbot.dev/pinbot/reconciler/config"
)

// TestCredentialsRefuseABadTokenFile checks that a token file of two lines,
// the forge's or an app's, is refused when read, with an error naming the
// file and not the token, instead of failing later as an HTTP header error.
func TestCredentialsRefuseABadTokenFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "token")
	if err := os.WriteFile(bad, []byte("secret1\nsecret2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const repo = "https://git.example/org/manifests.git"
	for _, tc := range []struct {
		name string
		cfg  *config.Config
		app  *config.App
		want string
	}{
		{name: "forge token file", cfg: &config.Config{Forge: &config.ForgeConfig{URL: "https://git.example", TokenFile: bad}}, app: &config.App{Name: "web", Repo: repo},
			want: "forge: token file " + bad + ": the token holds a line break"},
		{name: "app token file", cfg: &config.Config{}, app: &config.App{Name: "web", Repo: repo, Auth: &config.Auth{TokenFile: bad}},
			want: "app web: token file " + bad + ": the token holds a line break"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gitAuth(tc.cfg.Forge, "", tc.app)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("gitAuth = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error quotes the token: %s", err)
			}
		})
	}
}
