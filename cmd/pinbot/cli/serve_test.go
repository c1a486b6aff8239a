package cli

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/reconciler"
)

func TestReconcileWebhookFlagErrors(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "pinbot.yaml")
	if err := os.WriteFile(cfg, []byte("apps:\n  - {name: web, repo: 'http://127.0.0.1:1/o/r.git', namespace: web}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(webhookSecretEnv, "")
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"reconcile", "--config", cfg, "--listen", "127.0.0.1:0"}, exitUsage, "flag --webhook-secret-file (or $PINBOT_WEBHOOK_SECRET): required with --listen"},
		{[]string{"reconcile", "--config", cfg, "--listen", "127.0.0.1:0", "--webhook-secret-file", empty}, exitUsage, "flag --webhook-secret-file: " + empty + " is empty"},
		{[]string{"reconcile", "--config", cfg, "--listen", "127.0.0.1:0", "--webhook-secret-file", filepath.Join(dir, "nope")}, exitUsage, "flag --webhook-secret-file: open"},
	} {
		t.Run(strings.Join(tc.args[3:], " "), func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.stderr)
			}
		})
	}
}

func TestReconcileWebhookAndMetricsEndpoints(t *testing.T) {
	const secret = "endpoint-s3cret"
	cfg := &reconciler.Config{Apps: []reconciler.App{{Name: "web", Repo: "http://gitea:3000/org/app.git", Branch: "main"}}}
	r, err := reconciler.New(cfg, &rest.Config{Host: "http://127.0.0.1:1"}, reconciler.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serve(ctx, ln, reconcilerMux(r, []byte(secret), nil)) }()
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

// TestReconcilerMuxRoutes checks the routes without a listener.
func TestReconcilerMuxRoutes(t *testing.T) {
	r, err := reconciler.New(&reconciler.Config{}, &rest.Config{Host: "http://127.0.0.1:1"}, reconciler.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	mux := reconcilerMux(r, []byte("x"), nil)
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
