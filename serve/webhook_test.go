package serve

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
)

func sign(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return hex.EncodeToString(mac.Sum(nil))
}

func TestValidSignature(t *testing.T) {
	body := `{"ref":"refs/heads/main"}`
	for _, tc := range []struct {
		name   string
		secret string
		sig    string
		want   bool
	}{
		{"good", "s3cret", sign("s3cret", body), true},
		{"good upper-case hex", "s3cret", strings.ToUpper(sign("s3cret", body)), true},
		{"other secret", "s3cret", sign("other", body), false},
		{"other body", "s3cret", sign("s3cret", body+" "), false},
		{"missing", "s3cret", "", false},
		{"not hex", "s3cret", "zz" + sign("s3cret", body)[2:], false},
		{"truncated", "s3cret", sign("s3cret", body)[:32], false},
		{"empty secret refuses even its own signature", "", sign("", body), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ValidSignature([]byte(tc.secret), []byte(body), tc.sig); got != tc.want {
				t.Errorf("ValidSignature = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParsePush(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		want    PushEvent
		wantErr string // substring
	}{
		{
			name: "gitea push",
			body: `{"ref":"refs/heads/main","before":"a","after":"b1","repository":{"id":1,"full_name":"org/app",` +
				`"clone_url":"http://gitea:3000/org/app.git","html_url":"http://gitea:3000/org/app"},"pusher":{"login":"x"}}`,
			want: func() PushEvent {
				p := PushEvent{Ref: "refs/heads/main", After: "b1"}
				p.Repository.FullName = "org/app"
				p.Repository.CloneURL = "http://gitea:3000/org/app.git"
				p.Repository.HTMLURL = "http://gitea:3000/org/app"
				return p
			}(),
		},
		{name: "not JSON", body: `ref=main`, wantErr: "decoding the push payload"},
		{name: "truncated", body: `{"ref":"refs/heads/main"`, wantErr: "decoding the push payload"},
		{name: "no ref", body: `{"repository":{"clone_url":"http://g/o/r.git"}}`, wantErr: "no ref"},
		{name: "no repository", body: `{"ref":"refs/heads/main"}`, wantErr: "no repository.clone_url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePush([]byte(tc.body))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParsePush error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParsePush (-want +got):\n%s", diff)
			}
		})
	}
}

// recorder records the apps a webhook triggers and the promotions it
// starts.
type recorder struct {
	mu       sync.Mutex
	apps     []string
	promoted []string
}

// triggered returns the apps triggered since the last call.
func (rc *recorder) triggered() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := rc.apps
	rc.apps = nil
	return out
}

func (rc *recorder) promotions() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.promoted...)
}

// testWebhook is the webhook of a serve whose config holds apps and
// promote: a reconciler on a cluster it never reaches decides which apps
// follow a push, and rc records what the webhook asks for.
func testWebhook(t *testing.T, secret string, promote []Target, apps ...config.App) (*webhook, *recorder) {
	t.Helper()
	cfg := &Config{Config: config.Config{Apps: apps}, Promote: promote}
	r, err := reconciler.New(&cfg.Config, &rest.Config{Host: "http://127.0.0.1:1"}, reconciler.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	rc := &recorder{}
	h := &webhook{
		secret: []byte(secret),
		follow: r.Following,
		trigger: func(_ context.Context, _ string, _, apps []string) ([]string, error) {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			rc.apps = append(rc.apps, apps...)
			return apps, nil
		},
		merged:  r.Merged,
		targets: cfg.Targets,
		promote: func(_ context.Context, t Target, image, tag string) (string, error) {
			rc.mu.Lock()
			defer rc.mu.Unlock()
			rc.promoted = append(rc.promoted, t.Repo+" "+image+":"+tag)
			return "", nil
		},
		requests: newWebhookCounter(),
		seen:     newDeliveries(maxDeliveries),
	}
	return h, rc
}

func TestWebhookHandler(t *testing.T) {
	const secret = "webhook-s3cret"
	h, rc := testWebhook(t, secret, nil,
		config.App{Name: "web", Repo: "http://gitea:3000/org/app.git", Branch: "main"},
		config.App{Name: "web-staging", Repo: "http://gitea:3000/org/app.git", Branch: "staging"},
	)
	srv := httptest.NewServer(h)
	defer srv.Close()
	payload := func(ref string) string {
		return `{"ref":"` + ref + `","after":"0123456789abcdef","repository":{"full_name":"org/app",` +
			`"clone_url":"http://gitea:3000/org/app.git","html_url":"http://gitea:3000/org/app"}}`
	}
	main := payload("refs/heads/main")
	for _, tc := range []struct {
		name      string
		method    string
		body      string
		sig       string
		event     string
		wantCode  int
		wantBody  string // substring
		wantApps  []string
		wantCount string // result label counted
	}{
		{name: "good signature triggers", method: "POST", body: main, sig: sign(secret, main),
			wantCode: 202, wantBody: `{"triggered":["web"]}`, wantApps: []string{"web"}, wantCount: webhookTriggered},
		{name: "bad signature", method: "POST", body: main, sig: sign("guess", main),
			wantCode: 401, wantBody: "X-Gitea-Signature", wantCount: webhookUnauthorized},
		{name: "missing signature", method: "POST", body: main,
			wantCode: 401, wantBody: "X-Gitea-Signature", wantCount: webhookUnauthorized},
		{name: "wrong branch", method: "POST", body: payload("refs/heads/feature"), sig: sign(secret, payload("refs/heads/feature")),
			wantCode: 200, wantBody: `{"triggered":[]}`, wantCount: webhookIgnored},
		{name: "other event", method: "POST", body: main, sig: sign(secret, main), event: "issues",
			wantCode: 200, wantBody: `{"triggered":[]}`, wantCount: webhookIgnored},
		{name: "unparsable", method: "POST", body: `{"ref":`, sig: sign(secret, `{"ref":`),
			wantCode: 400, wantBody: "decoding the push payload", wantCount: webhookBadRequest},
		{name: "GET", method: "GET",
			wantCode: 405, wantCount: webhookMethodNotAllowed},
		{name: "too large", method: "POST", body: strings.Repeat(" ", MaxWebhookBody+1),
			wantCode: 413, wantCount: webhookTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.ToFloat64(h.requests.WithLabelValues(tc.wantCount))
			req, err := http.NewRequest(tc.method, srv.URL, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.sig != "" {
				req.Header.Set("X-Gitea-Signature", tc.sig)
			}
			if tc.event != "" {
				req.Header.Set("X-Gitea-Event", tc.event)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode {
				t.Errorf("status %d, want %d (body %q)", resp.StatusCode, tc.wantCode, b)
			}
			if !strings.Contains(string(b), tc.wantBody) {
				t.Errorf("body %q, want it to contain %q", b, tc.wantBody)
			}
			if strings.Contains(string(b), secret) {
				t.Errorf("body %q holds the secret", b)
			}
			if resp.StatusCode < 300 {
				var wr webhookResponse
				if err := json.Unmarshal(b, &wr); err != nil {
					t.Errorf("decoding the response %q: %v", b, err)
				}
			}
			if diff := cmp.Diff(tc.wantApps, rc.triggered()); diff != "" {
				t.Errorf("triggered apps (-want +got):\n%s", diff)
			}
			if got := testutil.ToFloat64(h.requests.WithLabelValues(tc.wantCount)); got != before+1 {
				t.Errorf("pinbot_webhook_requests_total{result=%q} = %v, want %v", tc.wantCount, got, before+1)
			}
		})
	}
}
