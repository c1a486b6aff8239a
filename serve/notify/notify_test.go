package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"pinbot.dev/pinbot/internal/testenv/poll"
)

// receiver is a webhook endpoint that records what it was posted, and
// answers the first fail requests 503.
type receiver struct {
	mu     sync.Mutex
	bodies [][]byte
	sigs   []string
	fail   int
	hold   chan struct{} // when set, each request waits for it
}

func (rv *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rv.hold != nil {
		<-rv.hold
	}
	b, _ := io.ReadAll(r.Body)
	rv.mu.Lock()
	defer rv.mu.Unlock()
	if rv.fail > 0 {
		rv.fail--
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	rv.bodies = append(rv.bodies, b)
	rv.sigs = append(rv.sigs, r.Header.Get(SignatureHeader))
}

func (rv *receiver) got() ([][]byte, []string) {
	rv.mu.Lock()
	defer rv.mu.Unlock()
	return append([][]byte(nil), rv.bodies...), append([]string(nil), rv.sigs...)
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestJSONWebhook: a json target gets the events it selects, signed with
// HMAC-SHA256 over the body, after a 503 is retried; the others are not
// sent.
func TestJSONWebhook(t *testing.T) {
	rv := &receiver{fail: 1}
	srv := httptest.NewServer(rv)
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const secret = "notify-s3cret-key"
	n, err := New([]Target{{Name: "ops", URL: srv.URL, SecretFile: writeFile(t, secret), Envs: []string{"prod"},
		Reasons: []string{"Held", "Mismatch"}}}, Options{FirstBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	n.Run(ctx)
	n.Send(Event{Type: Warning, Reason: "Verified", Envs: []string{"prod"}, Message: "not selected: reason"})
	n.Send(Event{Type: Warning, Reason: "Held", Envs: []string{"staging"}, Message: "not selected: env"})
	n.Send(Event{Type: Warning, Reason: "Held", Repo: "platform/manifests", Envs: []string{"prod"}, Image: "r.example/web", Message: "sha256:0b7e failed to prove and is held"})
	poll.Until(t, 10*time.Second, "one delivery", func() (bool, string) {
		b, _ := rv.got()
		return len(b) == 1, ""
	})
	bodies, sigs := rv.got()
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(bodies[0])
	if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); sigs[0] != want {
		t.Errorf("signature %q, want %q", sigs[0], want)
	}
	var e Event
	if err := json.Unmarshal(bodies[0], &e); err != nil || e.Reason != "Held" || e.Repo != "platform/manifests" || e.Image != "r.example/web" || e.At.IsZero() {
		t.Errorf("body %s (%v), want the Held event with its time", bodies[0], err)
	}
	// The others never entered the queue: Send chose, and the one sent
	// is counted once delivered.
	poll.Until(t, 10*time.Second, "the delivery counted", func() (bool, string) {
		return testutil.ToFloat64(n.sent.WithLabelValues("ops", "sent")) == 1, ""
	})
	if q := len(n.senders[0].queue); q != 0 {
		t.Errorf("%d events left queued, want none", q)
	}
}

// TestSlackWebhook: a slack target's URL comes from a file and never
// shows in an error; its body is Slack's {"text": …}; warningsOnly sends
// only bad news; a target that answers 4xx is not retried.
func TestSlackWebhook(t *testing.T) {
	rv := &receiver{}
	srv := httptest.NewServer(rv)
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	n, err := New([]Target{{Name: "chat", URLFile: writeFile(t, srv.URL+"/services/T0/B0/s3cretpath"), Format: FormatSlack, WarningsOnly: true}},
		Options{FirstBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	n.Run(ctx)
	n.Send(Event{Type: Normal, Reason: "Verified", App: "web-prod", Message: "fine"})
	n.Send(Event{Type: Warning, Reason: "Mismatch", App: "web-prod", Envs: []string{"prod"}, Message: "pod web-1 runs sha256:aaa, Git pins sha256:bbb"})
	poll.Until(t, 10*time.Second, "one delivery", func() (bool, string) {
		b, _ := rv.got()
		return len(b) == 1, ""
	})
	bodies, sigs := rv.got()
	var msg map[string]string
	if err := json.Unmarshal(bodies[0], &msg); err != nil || !strings.Contains(msg["text"], "pinbot: Mismatch") || !strings.Contains(msg["text"], "app web-prod, prod") || sigs[0] != "" {
		t.Errorf("slack body %s, signature %q", bodies[0], sigs[0])
	}

	// A 404 is not retried, and the error hides the URL's secret path.
	gone := httptest.NewServer(http.NotFoundHandler())
	defer gone.Close()
	n2, err := New([]Target{{Name: "gone", URLFile: writeFile(t, gone.URL+"/services/T0/B0/other-secret-path"), Format: FormatSlack}}, Options{FirstBackoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	err = n2.senders[0].deliver(ctx, Event{Type: Warning, Reason: "Held", Message: "x"}, Options{Attempts: 3, FirstBackoff: time.Hour})
	if err == nil || !strings.Contains(err.Error(), "HTTP 404") || strings.Contains(err.Error(), "other-secret-path") {
		t.Errorf("deliver to a 404 = %v, want HTTP 404 at once, without the URL's path", err)
	}
}

// TestFullQueueDrops: a target that does not answer fills its queue;
// further events are dropped and counted, and Send never blocks.
func TestFullQueueDrops(t *testing.T) {
	rv := &receiver{hold: make(chan struct{})}
	srv := httptest.NewServer(rv)
	defer srv.Close()
	defer close(rv.hold)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	n, err := New([]Target{{Name: "slow", URL: srv.URL}}, Options{QueueSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	n.Run(ctx)
	done := make(chan struct{})
	go func() {
		for range 10 {
			n.Send(Event{Type: Normal, Reason: "Verified", Message: "m"})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Send blocked on a full queue")
	}
	// One in flight, two queued: seven (or eight, if the sender had not
	// taken the first yet) dropped.
	if got := testutil.ToFloat64(n.sent.WithLabelValues("slow", "dropped")); got < 7 {
		t.Errorf("dropped = %v, want at least 7 of 10", got)
	}
}

// TestTargetProblems: a bad entry is refused naming the field.
func TestTargetProblems(t *testing.T) {
	for _, tc := range []struct {
		t    Target
		want string
	}{
		{Target{URL: "https://x.example/h"}, "name:"},
		{Target{Name: "a"}, "want url or urlFile"},
		{Target{Name: "a", URL: "https://x.example", URLFile: "/f"}, "give one"},
		{Target{Name: "a", URL: "ftp://x.example"}, "want an http or https URL"},
		{Target{Name: "a", URL: "https://x.example", Format: "teams"}, "format"},
		{Target{Name: "a", URL: "https://x.example", Format: FormatSlack, SecretFile: "/k"}, "not signed"},
	} {
		if got := strings.Join(tc.t.Problems(), "; "); !strings.Contains(got, tc.want) {
			t.Errorf("Problems(%+v) = %q, want %q", tc.t, got, tc.want)
		}
	}
	if got := (&Target{Name: "a", URL: "https://x.example/h"}).Problems(); len(got) != 0 {
		t.Errorf("a good entry: %q", got)
	}
}

// TestNoRedirectNoCleartext: a notification is posted where its target
// says and nowhere else: a redirect is a failed delivery, and the place
// it points to gets neither the signed body nor the URL in a Referer. A
// plain-HTTP URL off loopback is refused unless the entry says insecure.
// Before, the client followed up to five redirects.
func TestNoRedirectNoCleartext(t *testing.T) {
	elsewhere := &receiver{}
	other := httptest.NewServer(elsewhere)
	defer other.Close()
	var referers []string
	var mu sync.Mutex
	other.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		referers = append(referers, r.Header.Get("Referer"))
		mu.Unlock()
		elsewhere.ServeHTTP(w, r)
	})
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/collect", http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	n, err := New([]Target{{Name: "ops", URLFile: writeFile(t, redirecting.URL+"/services/T000/B000/XXXX"), SecretFile: writeFile(t, "k")}},
		Options{FirstBackoff: time.Millisecond, Attempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	n.Run(ctx)
	n.Send(Event{Type: Warning, Reason: "Held", Message: "held"})
	poll.Until(t, 10*time.Second, "the delivery given up", func() (bool, string) {
		return testutil.ToFloat64(n.sent.WithLabelValues("ops", "failed")) == 1, ""
	})
	mu.Lock()
	defer mu.Unlock()
	if b, _ := elsewhere.got(); len(b) != 0 || len(referers) != 0 {
		t.Errorf("the redirect's target got %d bodies, Referers %q; want nothing", len(b), referers)
	}

	for _, tc := range []struct {
		t    Target
		want string // in Problems; "" for none
	}{
		{Target{Name: "a", URL: "http://hooks.example/x"}, "plain HTTP to a host that is not loopback"},
		{Target{Name: "a", URL: "http://hooks.example/x", Insecure: true}, ""},
		{Target{Name: "a", URL: "http://127.0.0.1:9/x"}, ""},
	} {
		got := strings.Join(tc.t.Problems(), "; ")
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("Problems(%+v) = %q, want %q", tc.t, got, tc.want)
		}
	}
}

// TestSlackTextIsEscaped: a hold reason typed by a person, or a name,
// cannot mention everyone or show a link under another name in Slack.
func TestSlackTextIsEscaped(t *testing.T) {
	got := Event{Type: Warning, Reason: "Held", Repo: "org/<!here>", Message: "held: <!channel> see <https://evil.example|the runbook> & more"}.text()
	for _, bad := range []string{"<!channel>", "<!here>", "<https://evil.example|"} {
		if strings.Contains(got, bad) {
			t.Errorf("text %q holds %q, which Slack reads as markup", got, bad)
		}
	}
	if !strings.Contains(got, "&lt;!channel&gt;") || !strings.Contains(got, "&amp; more") {
		t.Errorf("text %q, want <, > and & escaped", got)
	}
}
