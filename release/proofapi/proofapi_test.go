package proofapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/trust/proven"
)

const (
	image        = "registry.example/org/web"
	provenDigest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	pending      = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	held         = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
)

// fakeLedger answers as serve would for two environments: staging, where
// proven runs and held is held, and prod, frozen.
func fakeLedger(_ context.Context, q Query) (Answer, error) {
	since := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	a := Answer{Query: q, Pinned: provenDigest, Proven: provenDigest}
	switch q.Env {
	case "staging":
		if q.Digest == provenDigest {
			a.Verified, a.Since = true, &since
			a.Pods = []release.Pod{{App: "web-staging", Namespace: "staging", Pod: "web-1", Running: provenDigest, Verdict: "Verified", Ready: true}}
		} else {
			a.Why = "pins " + provenDigest[:19]
		}
		if q.Digest == held {
			a.Hold = &release.Hold{Env: "staging", Image: image, Digest: held, Reason: "crash loop", Since: since}
		}
	case "prod":
		until := since.Add(time.Hour)
		a.FrozenUntil = &until
	default:
		return Answer{}, ErrUnknown
	}
	return a, nil
}

func newGate(t *testing.T) Client {
	t.Helper()
	srv := httptest.NewServer(Handler(fakeLedger, []byte("t0ken")))
	t.Cleanup(srv.Close)
	return Client{URL: srv.URL, Token: "t0ken", HTTP: srv.Client()}
}

func TestHandlerRefusesWithoutTheToken(t *testing.T) {
	c := newGate(t)
	for _, token := range []string{"", "t0ke", "t0ken2", "T0KEN"} {
		req, _ := http.NewRequest(http.MethodGet, c.URL+Path+"?env=staging&image="+image+"&digest="+provenDigest, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("token %q: %s, WWW-Authenticate %q; want 401 with a challenge", token, resp.Status, resp.Header.Get("WWW-Authenticate"))
		}
		// A wrong token is told apart from none: the caller has one, and
		// it is not the gate's.
		want := map[bool]string{true: "a bearer token is required", false: "is not the gate's"}[token == ""]
		if !strings.Contains(string(body), want) {
			t.Errorf("token %q: %s; want %q", token, body, want)
		}
	}
}

func TestHandlerAnswers(t *testing.T) {
	c := newGate(t)
	ctx := context.Background()
	a, err := c.Ask(ctx, Query{Env: "staging", Image: image + ":v1", Digest: provenDigest})
	if err != nil {
		t.Fatal(err)
	}
	if !a.Verified || a.Since == nil || len(a.Pods) != 1 || a.Image != image {
		t.Errorf("proven digest: %+v; want verified, since, one Pod, the image without its tag", a)
	}
	a, err = c.Ask(ctx, Query{Env: "staging", Image: image, Digest: pending})
	if err != nil || a.Verified || a.Why == "" {
		t.Errorf("unproven digest: %+v, %v; want not verified, with why", a, err)
	}
	for _, tc := range []struct {
		q    Query
		want string
	}{
		{Query{Image: image, Digest: provenDigest}, "HTTP 400: give env (with image) or app"},
		{Query{Env: "staging", App: "web", Image: image, Digest: provenDigest}, "HTTP 400: give env (with image) or app"},
		{Query{Env: "staging", Digest: provenDigest}, "HTTP 400: env needs image"},
		{Query{Env: "staging", Image: image, Digest: "sha256:abc"}, "HTTP 400: digest"},
		{Query{Env: "staging", Image: "Registry.example/web:", Digest: provenDigest}, "HTTP 400: image: "},
		{Query{Env: "qa", Image: image, Digest: provenDigest}, "HTTP 404: no such environment or app"},
	} {
		if _, err := c.Ask(ctx, tc.q); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Ask(%+v) = %v; want an error with %q", tc.q, err, tc.want)
		}
	}
}

func TestAdmit(t *testing.T) {
	noon := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	g := Admit{Asker: newGate(t), Now: func() time.Time { return noon.Add(time.Hour) }}
	ctx := context.Background()
	for _, tc := range []struct {
		name                  string
		env, upstream, digest string
		force                 bool
		soak                  time.Duration
		want                  string // "" admits
	}{
		{"proven upstream", "canary", "staging", provenDigest, false, 0, "404"}, // canary is unknown to the ledger
		{"proven upstream, soaking", "prod", "staging", provenDigest, false, 2 * time.Hour, "is proven in staging since 2026-12-02T12:00:00Z and soaks there until 2026-12-02T14:00:00Z before prod takes it"},
		{"proven upstream, soaked, frozen downstream", "prod", "staging", provenDigest, false, time.Hour, "prod is frozen until"},
		{"unproven upstream", "prod", "staging", pending, false, 0, "is not proven in staging, which prod takes its digests from: staging pins sha256:111111111111, proven; pass --force"},
		{"unproven, forced, frozen downstream", "prod", "staging", pending, true, 0, "prod is frozen until 2026-12-02T13:00:00Z"},
		{"held in the environment", "staging", "", held, false, 0, "is held in staging since 2026-12-02T12:00:00Z: crash loop (lift it with: pinbot hold release staging " + image + "@" + held + " --reason TEXT)"},
		{"a root environment", "staging", "", pending, false, 0, ""},
	} {
		err := g.Admit(ctx, release.Admission{Env: tc.env, Upstream: tc.upstream, Image: image, Digest: tc.digest, Force: tc.force, Soak: tc.soak})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v; want admitted", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v; want an error with %q", tc.name, err, tc.want)
		}
	}
}

// TestAdmitAnotherInstallationsUpstream: an upstream that is not in the
// chain is never asked (its ledger is another installation's); the
// attestation the caller read decides.
func TestAdmitAnotherInstallationsUpstream(t *testing.T) {
	noon := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	g := Admit{Asker: newGate(t), Now: func() time.Time { return noon }}
	a := release.Admission{Env: "prod", Upstream: "elsewhere", External: true, RequireAttestation: true, Image: image, Digest: pending, Soak: time.Hour}
	if err := g.Admit(context.Background(), a); err == nil || !strings.Contains(err.Error(), "carries no attestation that it was proven in elsewhere, which prod requires: no attestation was read") {
		t.Errorf("no attestation: %v; want refused for it", err)
	}
	a.Attested = &proven.Attested{Passed: true, ProvenSince: noon.Add(-2 * time.Hour), ProvenFor: 90 * time.Minute, AttestedAt: noon.Add(-30 * time.Minute)}
	if err := g.Admit(context.Background(), a); err == nil || !strings.Contains(err.Error(), "prod is frozen until") {
		t.Errorf("attested: %v; want only prod's own freeze to refuse it", err)
	}
}
