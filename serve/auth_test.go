package serve

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"pinbot.dev/pinbot/dashboard"
)

// TestDashboardReadAuth: with a read token and an auth proxy's header,
// the dashboard and its API answer a request bearing either and refuse
// one bearing neither (or another token), while the probes, /metrics
// and the webhook (signed on its own) stay as they are. A mux for
// --webhook-listen serves the webhook alone, and the main one then
// serves no webhook.
func TestDashboardReadAuth(t *testing.T) {
	d := testDaemon(t, &Config{}, Options{Secret: []byte("x"), Dashboard: true, ReadToken: []byte("r34d"), AuthHeader: "X-Forwarded-User"})
	mux := d.mux(true)
	for _, tc := range []struct {
		name, path string
		header     [2]string
		want       int
	}{
		{"no credentials", "/", [2]string{}, http.StatusUnauthorized},
		{"no credentials, API", dashboard.APIPath, [2]string{}, http.StatusUnauthorized},
		{"another token", dashboard.APIPath, [2]string{"Authorization", "Bearer nope"}, http.StatusUnauthorized},
		{"the token", dashboard.APIPath, [2]string{"Authorization", "Bearer r34d"}, http.StatusOK},
		{"the proxy's header", "/", [2]string{"X-Forwarded-User", "alice"}, http.StatusOK},
		{"an empty proxy header", "/", [2]string{"X-Forwarded-User", ""}, http.StatusUnauthorized},
		{"metrics stay open", "/metrics", [2]string{}, http.StatusOK},
		{"healthz stays open", "/healthz", [2]string{}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			if tc.header[0] != "" {
				req.Header.Set(tc.header[0], tc.header[1])
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Errorf("GET %s: %d, want %d\n%s", tc.path, rec.Code, tc.want, rec.Body.String())
			}
		})
	}
	for _, tc := range []struct {
		name string
		h    http.Handler
		want int
	}{
		{"the main listener without the webhook", testDaemon(t, &Config{}, Options{Secret: []byte("x")}).mux(false), http.StatusNotFound},
		{"the webhook listener", d.webhookMux(), http.StatusUnauthorized}, // unsigned: the webhook's own 401
	} {
		rec := httptest.NewRecorder()
		tc.h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/webhook/gitea", nil))
		if rec.Code != tc.want {
			t.Errorf("%s: POST /webhook/gitea: %d, want %d", tc.name, rec.Code, tc.want)
		}
	}
	rec := httptest.NewRecorder()
	d.webhookMux().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("the webhook listener serves /metrics: %d", rec.Code)
	}
}
