package registry

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// credentialHelper installs docker-credential-NAME on PATH: a program, as
// ECR's and GCR's helpers are, that answers `get` with user and pass for
// any server it is asked about, and logs what it was asked.
func credentialHelper(t *testing.T, name, user, pass string) (asked func() string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "asked")
	script := fmt.Sprintf("#!/bin/sh\n[ \"$1\" = get ] || exit 1\nread server\necho \"$server\" >> %q\nprintf '{\"ServerURL\":\"%%s\",\"Username\":%q,\"Secret\":%q}' \"$server\"\n", log, user, pass)
	if err := os.WriteFile(filepath.Join(dir, "docker-credential-"+name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() string {
		b, _ := os.ReadFile(log)
		return strings.TrimSpace(string(b))
	}
}

// TestCredentialSources: credentials come from a docker credential
// helper (credHelpers for one registry, credsStore for all), and, for the
// forge's own registry, from the forge token when the docker config has
// none; the docker config's win over the token. A 401 says where
// credentials were looked for, or which were refused.
func TestCredentialSources(t *testing.T) {
	// As Gitea's registry does, a password that is a valid token is
	// enough, whoever the user.
	reg := newTestRegistry(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, pass, ok := r.BasicAuth(); !ok || pass != testPass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test registry"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	want := reg.push(t, "app:v1", buildImage(t, imageSpec{})).String()
	ref := reg.host + "/app:v1"
	forge := "http://" + reg.host
	for _, tc := range []struct {
		name     string
		config   string // docker config.json, "" for none
		helper   [2]string
		opts     []Option
		wantHint string // "" for success
	}{
		{name: "credHelpers", config: fmt.Sprintf(`{"credHelpers":{%q:"pinbottest"}}`, reg.host), helper: [2]string{testUser, testPass}},
		{name: "credsStore", config: `{"credsStore":"pinbottest"}`, helper: [2]string{testUser, testPass}},
		{name: "the forge token when the docker config has none", opts: []Option{WithForgeToken(forge, testPass)}},
		{name: "the docker config wins over the forge token", config: dockerConfig(reg.host, testUser, testPass),
			opts: []Option{WithForgeToken(forge, "stale-forge-token-123")}},
		{name: "the forge token is for the forge's host alone", opts: []Option{WithForgeToken("http://gitea.example", testPass)},
			wantHint: "pinbot sent no credentials for " + reg.host + ": it looks in the docker config " + filepath.Join("DIR", "config.json") + " (auths, credHelpers, credsStore) (docker login " + reg.host},
		{name: "no credentials", wantHint: "pinbot sent no credentials for " + reg.host + ": it looks in the docker config"},
		{name: "a helper's credentials refused", config: `{"credsStore":"pinbottest"}`, helper: [2]string{testUser, "helper-wrong-Pa55"},
			wantHint: "pinbot sent credentials for " + reg.host + " from the docker config"},
		{name: "the forge token refused", opts: []Option{WithForgeToken(forge, "forge-wrong-token-456")},
			wantHint: "pinbot sent credentials for " + reg.host + " from the forge token, and the registry refused them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolateDockerConfig(t, tc.config)
			var asked func() string
			if tc.helper[0] != "" {
				asked = credentialHelper(t, "pinbottest", tc.helper[0], tc.helper[1])
			}
			got, err := newClient(t, tc.opts...).Resolve(t.Context(), ref)
			if tc.wantHint == "" {
				if err != nil {
					t.Fatalf("Resolve: %s", err)
				}
				if got.Digest != want {
					t.Errorf("digest = %s, want %s", got.Digest, want)
				}
				if asked != nil && !strings.Contains(asked(), reg.host) {
					t.Errorf("the helper was asked for %q, want %s", asked(), reg.host)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.StatusCode != 401 {
				t.Fatalf("Resolve = %v, want an *Error with status 401", err)
			}
			hint := strings.Replace(tc.wantHint, "DIR", os.Getenv("DOCKER_CONFIG"), 1)
			if !strings.Contains(err.Error(), hint) {
				t.Errorf("Resolve = %s\nwant it to say %q", err, hint)
			}
			assertNoSecrets(t, err, "helper-wrong-Pa55", "forge-wrong-token-456", testPass)
		})
	}
}
