package serve

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
)

func TestWebhookAndMetricsEndpoints(t *testing.T) {
	const secret = "endpoint-s3cret"
	d := testDaemon(t, &Config{Config: config.Config{Apps: []config.App{{Name: "web", Repo: "http://gitea:3000/org/app.git", Branch: "main"}}}},
		Options{Secret: []byte(secret)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serveHTTP(ctx, ln, d.mux(true)) }()
	base := "http://" + ln.Addr().String()

	get := func(method, path, body, sig string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if sig != "" {
			req.Header.Set("X-Gitea-Signature", sig)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("GET", "/healthz", "", ""); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	push := `{"ref":"refs/heads/main","after":"abc","repository":{"full_name":"org/app","clone_url":"http://gitea:3000/org/app.git"}}`
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(push))
	if code, body := get("POST", "/webhook/gitea", push, hex.EncodeToString(mac.Sum(nil))); code != 202 || !strings.Contains(body, `{"triggered":["web"]}`) {
		t.Errorf("/webhook/gitea signed: %d %q", code, body)
	}
	if code, body := get("POST", "/webhook/gitea", push, "00"); code != 401 || strings.Contains(body, secret) {
		t.Errorf("/webhook/gitea unsigned: %d %q", code, body)
	}
	code, body := get("GET", "/metrics", "", "")
	for _, line := range []string{
		`pinbot_webhook_requests_total{result="triggered"} 1`,
		`pinbot_webhook_requests_total{result="unauthorized"} 1`,
		"go_goroutines ",                 // the Go collector
		"process_resident_memory_bytes ", // the process collector
	} {
		if code != 200 || !strings.Contains(body, line) {
			t.Errorf("/metrics: %d, lacks %q:\n%s", code, line, body)
		}
	}
	if strings.Contains(body, secret) {
		t.Errorf("/metrics holds the secret")
	}

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return 10s after ctx ended")
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("still listening after shutdown")
	}
}

// TestMuxRoutes checks the routes without a listener.
func TestMuxRoutes(t *testing.T) {
	mux := testDaemon(t, &Config{}, Options{Secret: []byte("x")}).mux(true)
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/healthz", 200},
		{"GET", "/metrics", 200},
		{"GET", "/webhook/gitea", 405},
		{"POST", "/webhook/gitea", 401},
		{"GET", "/", 404},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.want {
				t.Errorf("status %d, want %d", rec.Code, tc.want)
			}
		})
	}
}

// TestNoWebhook: with NoWebhook serve needs no secret to listen, and
// /webhook/gitea is not served.
func TestNoWebhook(t *testing.T) {
	if _, err := newDaemon(&Config{}, nil, nil, Options{Listen: ":0"}); err == nil {
		t.Fatal("listening without a secret, and with the webhook on: no error")
	}
	d := testDaemon(t, &Config{}, Options{Listen: ":0", NoWebhook: true})
	rec := httptest.NewRecorder()
	d.mux(!d.o.NoWebhook).ServeHTTP(rec, httptest.NewRequest("POST", "/webhook/gitea", nil))
	if rec.Code != 404 {
		t.Errorf("POST /webhook/gitea with NoWebhook: %d, want 404", rec.Code)
	}
	o := Options{Listen: ":0", NoWebhook: true, WebhookListen: ":0", ShutdownTimeout: time.Second, ReleaseInterval: time.Second}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--no-webhook") {
		t.Errorf("--webhook-listen with --no-webhook: %v", err)
	}
}

// testDaemon is serve set up for cfg on a cluster it never reaches.
func testDaemon(t *testing.T, cfg *Config, o Options) *daemon {
	t.Helper()
	r, err := reconciler.New(&cfg.Config, &rest.Config{Host: "http://127.0.0.1:1"}, reconciler.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	d, err := newDaemon(cfg, r, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
