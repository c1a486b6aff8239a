package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
)

func TestRequestedApps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, cur map[string]string
		want     []string
	}{
		{"first request", nil, map[string]string{annotationRequestedAt: "t1", triggerAppPrefix + "web": "t1"}, []string{"web"}},
		{"unchanged", map[string]string{triggerAppPrefix + "web": "t1"}, map[string]string{triggerAppPrefix + "web": "t1"}, nil},
		{"one of two moved", map[string]string{triggerAppPrefix + "web": "t1", triggerAppPrefix + "api": "t1"},
			map[string]string{triggerAppPrefix + "web": "t1", triggerAppPrefix + "api": "t2"}, []string{"api"}},
		{"other annotations", nil, map[string]string{"example.com/x": "1", triggerAppPrefix: "t"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := requestedApps(tc.old, tc.cur)
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("requestedApps (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestedPushes(t *testing.T) {
	p := pushRequest{Branch: "main", URLs: []string{"https://git.example/o/r.git", "https://git.example/o/r"}}
	stamped := func(at string) map[string]string {
		q := p
		q.At = at
		v, err := json.Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{annotationRequestedAt: at, p.key(): string(v)}
	}
	if got := requestedPushes(nil, stamped("t1")); len(got) != 1 || got[0].Branch != "main" || len(got[0].URLs) != 2 || got[0].At != "t1" {
		t.Errorf("first push: got %+v", got)
	}
	if got := requestedPushes(stamped("t1"), stamped("t1")); len(got) != 0 {
		t.Errorf("unchanged: got %+v, want none", got)
	}
	if got := requestedPushes(stamped("t1"), stamped("t2")); len(got) != 1 || got[0].At != "t2" {
		t.Errorf("pushed again: got %+v, want the second push", got)
	}
	if got := requestedPushes(nil, map[string]string{p.key(): "not json", triggerPushPrefix + "x": `{"branch":"main"}`}); len(got) != 0 {
		t.Errorf("not pinbot's: got %+v, want none", got)
	}
	other := pushRequest{Branch: "dev", URLs: p.URLs}
	if other.key() == p.key() {
		t.Errorf("two branches share the key %s", p.key())
	}
}

func TestLeaseValidate(t *testing.T) {
	for _, tc := range []struct {
		o    Lease
		want string
	}{
		{Lease{Duration: 35 * time.Second, RenewDeadline: 30 * time.Second, RetryPeriod: 5 * time.Second}, ""},
		{Lease{Duration: 35 * time.Second, RenewDeadline: 30 * time.Second}, "flag --retry-period"},
		{Lease{Duration: 35 * time.Second, RenewDeadline: 5 * time.Second, RetryPeriod: 5 * time.Second}, "flag --renew-deadline"},
		{Lease{Duration: 30 * time.Second, RenewDeadline: 30 * time.Second, RetryPeriod: 5 * time.Second}, "flag --lease-duration"},
	} {
		err := tc.o.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: got %v, want an error naming %q", tc.o, err, tc.want)
		}
	}
}

func TestServeMuxReadyAndDraining(t *testing.T) {
	cfg := &config.Config{StateNamespace: "pinbot-system", Apps: []config.App{{Name: "web", Repo: "http://gitea:3000/org/app.git", Branch: "main"}}}
	r, err := reconciler.New(cfg, &rest.Config{Host: "http://127.0.0.1:1"}, reconciler.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d := &daemon{o: Options{Secret: []byte("s"), Dashboard: true}, cfg: &Config{Config: *cfg}, r: r, metrics: prometheus.NewRegistry(), requests: newWebhookCounter(), pushApps: newPushCounter()}
	mux := d.mux(true)
	code := func(method, path string) int {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader("{}")))
		return rec.Code
	}
	type answers struct{ Readyz, Healthz, Webhook int }
	got := []answers{{code("GET", "/readyz"), code("GET", "/healthz"), code("POST", "/webhook/gitea")}}
	d.ready.Store(true)
	got = append(got, answers{code("GET", "/readyz"), code("GET", "/healthz"), code("POST", "/webhook/gitea")})
	d.checked.Store(true)
	got = append(got, answers{code("GET", "/readyz"), code("GET", "/healthz"), code("POST", "/webhook/gitea")})
	d.draining.Store(true)
	got = append(got, answers{code("GET", "/readyz"), code("GET", "/healthz"), code("POST", "/webhook/gitea")})
	want := []answers{
		{http.StatusServiceUnavailable, http.StatusOK, http.StatusUnauthorized}, // not ready; unsigned webhook
		{http.StatusServiceUnavailable, http.StatusOK, http.StatusUnauthorized}, // the state namespace not checked
		{http.StatusOK, http.StatusOK, http.StatusUnauthorized},
		{http.StatusServiceUnavailable, http.StatusOK, http.StatusServiceUnavailable}, // draining
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers before ready, ready, checked, draining (-want +got):\n%s", diff)
	}
}

// TestReadyzWithoutTheAPI: serve started while the API server does not
// answer keeps /readyz at 503, saying why, instead of claiming ready.
func TestReadyzWithoutTheAPI(t *testing.T) {
	cfg := &config.Config{StateNamespace: "pinbot-system", Apps: []config.App{{Name: "web", Repo: "http://gitea:3000/org/app.git", Branch: "main"}}}
	r, err := reconciler.New(cfg, &rest.Config{Host: "http://127.0.0.1:1"}, reconciler.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// A client of the same API server that does not answer.
	kc, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := newDaemon(&Config{Config: *cfg}, r, kc, Options{Dashboard: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- d.run(ctx) }()
	mux := d.mux(true)
	poll.Until(t, time.Minute, "serve running its loops", func() (bool, string) { return d.ready.Load(), "" })
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "state namespace") {
		t.Errorf("/readyz = %d %q, want 503 saying the state namespace was not found yet", rec.Code, rec.Body.String())
	}
	cancel()
	<-done
}

func TestRequestedPromotions(t *testing.T) {
	web := promoteRequest{Repo: "platform/manifests", Image: "gitea.example/platform/web", Tag: "v2", At: "t1"}
	api := promoteRequest{Repo: "platform/manifests", Image: "gitea.example/platform/api", Tag: "v1", At: "t1"}
	ann := func(ps ...promoteRequest) map[string]string {
		m := map[string]string{annotationRequestedAt: "t"}
		for _, p := range ps {
			b, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			m[p.key()] = string(b)
		}
		return m
	}
	web2 := web
	web2.Tag, web2.At = "v3", "t2"
	again := web
	again.At = "t3"
	for _, tc := range []struct {
		name     string
		old, cur map[string]string
		want     []promoteRequest
	}{
		{"first request", nil, ann(web), []promoteRequest{web}},
		{"unchanged", ann(web, api), ann(web, api), nil},
		{"a newer tag of one image", ann(web, api), ann(web2, api), []promoteRequest{web2}},
		{"the same tag pushed again", ann(web), ann(again), []promoteRequest{again}},
		{"not pinbot's", nil, map[string]string{triggerPromotePrefix + "x": "{not json", triggerPromotePrefix + "y": `{"repo":"o/r"}`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, requestedPromotions(tc.old, tc.cur)); diff != "" {
				t.Errorf("requestedPromotions (-want +got):\n%s", diff)
			}
		})
	}
	if web.key() == api.key() || web.key() != web2.key() {
		t.Errorf("keys: web %s, api %s, web v3 %s: want one per repository and image", web.key(), api.key(), web2.key())
	}
	if len(web.key()) > 253 || len(strings.TrimPrefix(web.key(), triggerPromotePrefix)) > 63 {
		t.Errorf("key %q is not a valid annotation key", web.key())
	}
}
