package registry

import (
	"testing"

	sdk "code.gitea.io/sdk/gitea"

	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
)

// TestForgeTokenOnGiteasRegistry: on the real Gitea registry, a forge
// token with read:package is the credential pinbot reads with when the
// docker config has none; a token with only the scopes promote needs
// (write:repository, write:issue) is refused there, and pinbot then reads
// the public package anonymously, as it did before it tried the token.
func TestForgeTokenOnGiteasRegistry(t *testing.T) {
	srv := giteatest.Start(t, gitea.Options{})
	ctx := t.Context()
	bot, err := srv.CreateUser(ctx, "bot")
	if err != nil {
		t.Fatal(err)
	}
	ref := srv.RegistryHost + "/" + srv.AdminUser + "/app:v1"
	want, err := srv.PushRandomImage(ref)
	if err != nil {
		t.Fatal(err)
	}
	c, err := sdk.NewClient(srv.URL, sdk.SetBasicAuth(bot.Name, bot.Password))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		scopes []sdk.AccessTokenScope
		used   string
	}{
		{"read:package", []sdk.AccessTokenScope{"write:repository", "write:issue", "read:package"}, forgeTokenSource},
		{"no package scope", []sdk.AccessTokenScope{"write:repository", "write:issue"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, _, err := c.CreateAccessToken(sdk.CreateAccessTokenOption{Name: tc.name, Scopes: tc.scopes})
			if err != nil {
				t.Fatal(err)
			}
			isolateDockerConfig(t, "")
			reg := newClient(t, WithForgeToken(srv.URL, tok.Token))
			got, err := reg.Resolve(ctx, ref)
			if err != nil {
				t.Fatalf("Resolve: %s", err)
			}
			if got.Digest != want {
				t.Errorf("digest %s, want the pushed %s", got.Digest, want)
			}
			if used, _ := reg.creds.used.Load(canonicalHost(srv.RegistryHost)); used != tc.used {
				t.Errorf("read with %q, want %q", used, tc.used)
			}
		})
	}
}
