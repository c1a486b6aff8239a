package reconciler

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
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

func push(ref, cloneURL, htmlURL string) PushEvent {
	p := PushEvent{Ref: ref}
	p.Repository.CloneURL, p.Repository.HTMLURL = cloneURL, htmlURL
	return p
}

func TestMatchApps(t *testing.T) {
	apps := []App{
		{Name: "web", Repo: "http://gitea:3000/org/app.git", Branch: "main"},
		{Name: "web-staging", Repo: "http://gitea:3000/org/app", Branch: "staging"},
		{Name: "api", Repo: "https://Gitea.Example.com/org/api/", Branch: "main"},
		{Name: "creds", Repo: "https://bot:tok@gitea.example.com/org/api.git", Branch: "main"},
		{Name: "local", Repo: "file:///srv/git/app", Branch: "main"},
	}
	for _, tc := range []struct {
		name string
		p    PushEvent
		want []string
	}{
		{"clone URL", push("refs/heads/main", "http://gitea:3000/org/app.git", ""), []string{"web"}},
		{"web URL", push("refs/heads/main", "", "http://gitea:3000/org/app/"), []string{"web"}},
		{"other branch", push("refs/heads/staging", "http://gitea:3000/org/app.git", ""), []string{"web-staging"}},
		{"unfollowed branch", push("refs/heads/feature", "http://gitea:3000/org/app.git", ""), nil},
		{"tag", push("refs/tags/main", "http://gitea:3000/org/app.git", ""), nil},
		{"host case and credentials ignored", push("refs/heads/main", "https://gitea.example.COM/org/api.git", ""), []string{"api", "creds"}},
		{"path case matters", push("refs/heads/main", "http://gitea:3000/Org/App.git", ""), nil},
		{"scheme matters", push("refs/heads/main", "https://gitea:3000/org/app.git", ""), nil},
		{"other repo", push("refs/heads/main", "http://gitea:3000/org/app2.git", ""), nil},
		{"prefix is not a match", push("refs/heads/main", "http://gitea:3000/org", ""), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, MatchApps(apps, tc.p)); diff != "" {
				t.Errorf("MatchApps (-want +got):\n%s", diff)
			}
		})
	}
}

// newOfflineReconciler is a Reconciler for apps on a cluster it never
// reaches: enough for the webhook and metrics, which make no request.
func newOfflineReconciler(t *testing.T, apps ...App) *Reconciler {
	t.Helper()
	r, err := New(&Config{Apps: apps}, &rest.Config{Host: "http://127.0.0.1:1"}, WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// triggered drains the apps' pending triggers and returns the names that
// had one.
func triggered(r *Reconciler) []string {
	var names []string
	for _, a := range r.cfg.Apps {
		select {
		case <-r.apps[a.Name].trigger:
			names = append(names, a.Name)
		default:
		}
	}
	return names
}

func TestWebhookHandler(t *testing.T) {
	const secret = "webhook-s3cret"
	r := newOfflineReconciler(t,
		App{Name: "web", Repo: "http://gitea:3000/org/app.git", Branch: "main"},
		App{Name: "web-staging", Repo: "http://gitea:3000/org/app.git", Branch: "staging"},
	)
	srv := httptest.NewServer(r.WebhookHandler([]byte(secret)))
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
			before := counterValue(t, r.metrics.webhooks.WithLabelValues(tc.wantCount))
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
			if diff := cmp.Diff(tc.wantApps, triggered(r)); diff != "" {
				t.Errorf("triggered apps (-want +got):\n%s", diff)
			}
			if got := counterValue(t, r.metrics.webhooks.WithLabelValues(tc.wantCount)); got != before+1 {
				t.Errorf("pinbot_webhook_requests_total{result=%q} = %v, want %v", tc.wantCount, got, before+1)
			}
		})
	}
}
