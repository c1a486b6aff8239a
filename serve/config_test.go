package serve

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const app = "apps:\n  - {name: web, repo: 'https://g.example/o/r.git', namespace: web}\n"

func TestParsePromote(t *testing.T) {
	cfg := app + `promote:
  - repo: platform/manifests
    drift: "0 */6 * * *"
    images: [gitea.example/platform/web]
`
	got, err := Parse("pinbot.yaml", []byte(cfg))
	if err != nil {
		t.Fatalf("Parse: %s", err)
	}
	want := []Target{{Repo: "platform/manifests", Drift: "0 */6 * * *", Images: []string{"gitea.example/platform/web"}, line: 4}}
	if diff := cmp.Diff(want, got.Promote, cmp.AllowUnexported(Target{})); diff != "" {
		t.Errorf("Promote (-want +got):\n%s", diff)
	}
	if len(got.Apps) != 1 || got.Apps[0].Branch != "main" {
		t.Errorf("the reconciler's part = %+v, want one app with the default branch", got.Apps)
	}
}

// TestParseNotify: a notify entry's files are taken relative to the
// config file's directory.
func TestParseNotify(t *testing.T) {
	got, err := Parse("/etc/pinbot/config/pinbot.yaml", []byte(app+"notify:\n  - {name: chat, urlFile: slack-url, format: slack, envs: [prod], warningsOnly: true}\n"))
	if err != nil {
		t.Fatalf("Parse: %s", err)
	}
	if len(got.Notify) != 1 || got.Notify[0].URLFile != "/etc/pinbot/config/slack-url" || got.Notify[0].Line() != 4 || !got.Notify[0].WarningsOnly {
		t.Errorf("Notify = %+v", got.Notify)
	}
}

func TestParsePromoteErrors(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         []string // substrings of the error
	}{
		{"bad promote", app + "promote:\n  - {repo: manifests, drift: 'every day', images: ['Web:v1']}\n  - {repo: o/r}\n", []string{
			`c.yaml:4: promote "manifests": repo "manifests": want OWNER/NAME`,
			`c.yaml:4: promote "manifests": drift "every day":`,
			`c.yaml:4: promote "manifests": images: repository "Web:v1"`,
			`c.yaml:5: promote "o/r": want drift, images or both`,
		}},
		{"unknown promote field", app + "promote:\n  - repo: o/r\n    drfit: '@hourly'\n", []string{`c.yaml:5: unknown field "drfit"`}},
		{"unknown top-level field", app + "promotes: []\n", []string{`c.yaml:3: unknown field "promotes"`}},
		{"bad notify", app + "notify:\n  - {name: chat, url: 'ftp://x.example'}\n  - {name: chat, urlFile: /s, format: teams}\n  - {url: https://x.example}\n", []string{
			`c.yaml:4: notify "chat": url: "ftp://x.example": want an http or https URL`,
			`c.yaml:5: notify "chat": format "teams": want json or slack`,
			`c.yaml:5: notify "chat": name: another notify entry has it`,
			`c.yaml:6: notify "": name: want a name`,
		}},
		{"attest format typo", app + "attest:\n  keyFile: cosign.key\n  format: bundel\n", []string{
			`c.yaml:5: attest.format "bundel": want bundle, legacy or both`,
		}},
		{"an OpenID Connect sign-in half given", app + "dashboard:\n  oidc: {issuer: 'ftp://sso.example', redirectURL: https://pinbot.example/auth/callback}\n", []string{
			`c.yaml: dashboard.oidc.clientID: required`,
			`c.yaml: dashboard.oidc.sessionKeyFile: required`,
			`c.yaml: dashboard.oidc.issuer "ftp://sso.example": want an http(s) URL`,
		}},
		{"unknown notify field", app + "notify:\n  - {name: n, url: 'https://x.example', event: [Held]}\n", []string{`c.yaml:4: unknown field "event"`}},
		{"the reconciler's problems too", "apps:\n  - {name: Web}\npromote:\n  - {repo: o/r}\n", []string{
			`c.yaml:2: app "Web": name: want a DNS-1123 label`, `c.yaml:4: promote "o/r": want drift, images or both`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.config))
			if err == nil {
				t.Fatalf("Parse succeeded, want error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
