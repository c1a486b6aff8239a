package registry

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"pinbot.dev/pinbot/internal/imageref"
)

const (
	testUser = "ci-bot"
	testPass = "s3cret-Pa55word-for-tests"
)

// basicAuth requires HTTP basic credentials on every /v2/ request. With
// echo, it puts what it was sent, the decoded password too, into its error
// bodies, as careless registries and proxies do; with denyManifests it
// answers 403 to manifest requests even with the right credentials.
func basicAuth(echo, denyManifests bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			user, pass, ok := r.BasicAuth()
			sent := fmt.Sprintf("you sent %q (%s:%s)", r.Header.Get("Authorization"), user, pass)
			if !ok || user != testUser || pass != testPass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test registry"`)
				w.WriteHeader(http.StatusUnauthorized)
				if echo {
					fmt.Fprintf(w, `{"errors":[{"code":"UNAUTHORIZED","message":%q}]}`, sent)
				}
				return
			}
			if denyManifests && isManifest(r) {
				w.WriteHeader(http.StatusForbidden)
				fmt.Fprintf(w, `{"errors":[{"code":"DENIED","message":%q}]}`, sent)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// tokenAuth is a registry behind token auth: /v2/ requests need a bearer
// token, which /token hands out for the test user's basic credentials. The
// realm is on the registry's own host, as go-containerregistry allows for
// loopback. With denyManifests, manifest requests get 403 echoing the token,
// bare and in its header.
func tokenAuth(t *testing.T, denyManifests bool, tokens *atomic.Int32) (func(http.Handler) http.Handler, string) {
	t.Helper()
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	token := "tok" + hex.EncodeToString(b)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/token" {
				user, pass, ok := r.BasicAuth()
				if !ok || user != testUser || pass != testPass {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				tokens.Add(1)
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(map[string]any{"token": token, "expires_in": 300})
				return
			}
			if r.Header.Get("Authorization") != "Bearer "+token {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="http://%s/token",service="test"`, r.Host))
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			if denyManifests && isManifest(r) {
				w.WriteHeader(http.StatusForbidden)
				msg := fmt.Sprintf("credential %s (header %q) may not pull", token, r.Header.Get("Authorization"))
				fmt.Fprintf(w, `{"errors":[{"code":"DENIED","message":%q}]}`, msg)
				return
			}
			next.ServeHTTP(w, r)
		})
	}, token
}

func dockerConfig(host, user, pass string) string {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	return fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth)
}

func TestBasicAuth(t *testing.T) {
	reg := newTestRegistry(t, basicAuth(true, false))
	want := reg.push(t, "app:v1", buildImage(t, imageSpec{})).String()
	ref := reg.host + "/app:v1"
	for _, tc := range []struct {
		name       string
		config     string // docker config.json, "" for none
		opts       []Option
		wantStatus int // 0: success
	}{
		{name: "WithBasicAuth", opts: []Option{WithBasicAuth(reg.host, testUser, testPass)}},
		{name: "docker config", config: dockerConfig(reg.host, testUser, testPass)},
		{name: "WithBasicAuth wins over the docker config",
			config: dockerConfig(reg.host, testUser, "stale-password"),
			opts:   []Option{WithBasicAuth(reg.host, testUser, testPass)}},
		{name: "WithBasicAuth for another host leaves the docker config",
			config: dockerConfig(reg.host, testUser, testPass),
			opts:   []Option{WithBasicAuth("other.example", "x", "other-password")}},
		{name: "no credentials", wantStatus: 401},
		{name: "wrong password", opts: []Option{WithBasicAuth(reg.host, testUser, "wrong-Pa55word-xyz")}, wantStatus: 401},
		{name: "wrong password from the docker config", config: dockerConfig(reg.host, testUser, "config-wrong-Pa55"), wantStatus: 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolateDockerConfig(t, tc.config)
			got, err := newClient(t, tc.opts...).Resolve(t.Context(), ref)
			if tc.wantStatus == 0 {
				if err != nil {
					t.Fatalf("Resolve: %s", err)
				}
				if got.Digest != want {
					t.Errorf("digest = %s, want %s", got.Digest, want)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.StatusCode != tc.wantStatus {
				t.Fatalf("Resolve = %v, want an *Error with status %d", err, tc.wantStatus)
			}
			assertNoSecrets(t, err, "wrong-Pa55word-xyz", "config-wrong-Pa55", testPass)
		})
	}
}

func TestTokenAuth(t *testing.T) {
	var tokens atomic.Int32
	wrap, _ := tokenAuth(t, false, &tokens)
	reg := newTestRegistry(t, wrap)
	idx, _ := buildIndex(t, nil, true, imageSpec{platform: platformAMD64}, imageSpec{platform: platformARM64})
	want := reg.push(t, "team/app:v1", idx).String()
	ref := reg.host + "/team/app:v1"

	for _, tc := range []struct {
		name       string
		config     string
		opts       []Option
		wantStatus int
	}{
		{name: "WithBasicAuth", opts: []Option{WithBasicAuth(reg.host, testUser, testPass)}},
		{name: "docker config", config: dockerConfig(reg.host, testUser, testPass)},
		{name: "no credentials", wantStatus: 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolateDockerConfig(t, tc.config)
			before := tokens.Load()
			c := newClient(t, tc.opts...)
			img, err := c.Describe(t.Context(), ref)
			if tc.wantStatus != 0 {
				var e *Error
				if !errors.As(err, &e) || e.StatusCode != tc.wantStatus {
					t.Fatalf("Describe = %v, want an *Error with status %d", err, tc.wantStatus)
				}
				return
			}
			if err != nil {
				t.Fatalf("Describe: %s", err)
			}
			if img.Digest != want || len(img.Children) != 2 {
				t.Errorf("Describe = %s with %d children, want %s with 2", img.Digest, len(img.Children), want)
			}
			// The Client keeps the handshake per registry: one token for a
			// Describe that made many requests, none for the next call.
			if n := tokens.Load() - before; n != 1 {
				t.Errorf("tokens issued = %d, want 1", n)
			}
			if _, err := c.Resolve(t.Context(), ref); err != nil {
				t.Errorf("Resolve: %s", err)
			}
			if n := tokens.Load() - before; n != 1 {
				t.Errorf("tokens issued after a second call = %d, want 1", n)
			}
		})
	}
}

// TestErrorsCarryNoCredentials has registries echo the credentials they
// were sent into their error bodies, and checks they never reach an error
// string.
func TestErrorsCarryNoCredentials(t *testing.T) {
	isolateDockerConfig(t, "")
	var tokens atomic.Int32
	wrap, token := tokenAuth(t, true, &tokens)
	tokenReg := newTestRegistry(t, wrap)
	tokenReg.push(t, "app:v1", buildImage(t, imageSpec{}))
	basicReg := newTestRegistry(t, basicAuth(true, true))
	basicReg.push(t, "app:v1", buildImage(t, imageSpec{}))
	basicBlob := base64.StdEncoding.EncodeToString([]byte(testUser + ":" + testPass))

	for _, tc := range []struct {
		name    string
		ref     string
		secrets []string
	}{
		{"bearer token echoed", tokenReg.host + "/app:v1", []string{token, testPass}},
		{"basic password echoed", basicReg.host + "/app:v1", []string{testPass, basicBlob}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, WithBasicAuth(tokenReg.host, testUser, testPass), WithBasicAuth(basicReg.host, testUser, testPass))
			// Candidates GETs the manifest: a HEAD answer has no body to echo.
			_, err := c.Candidates(t.Context(), tc.ref, imageref.Platform{OS: "linux", Architecture: "amd64"}, true)
			var e *Error
			if !errors.As(err, &e) || e.StatusCode != http.StatusForbidden {
				t.Fatalf("Candidates = %v, want an *Error with status 403", err)
			}
			if !strings.Contains(err.Error(), "REDACTED") {
				t.Errorf("error %q shows no redaction; did the registry echo anything?", err)
			}
			assertNoSecrets(t, err, tc.secrets...)
			assertNoSecrets(t, e.Err, tc.secrets...)
		})
	}
}

func assertNoSecrets(t *testing.T, err error, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error %q contains the secret %q", err, s)
		}
	}
}
