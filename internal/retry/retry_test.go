package retry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// fakeClock advances only when the transport waits, and records the waits.
type fakeClock struct {
	mu    sync.Mutex
	at    time.Time
	waits []time.Duration
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.at = c.at.Add(d)
	return ctx.Err()
}

// answer is what the server says to one attempt.
type answer struct {
	status     int
	retryAfter string
}

// script serves the answers in order, then 200 OK, and counts attempts.
func script(t *testing.T, answers []answer) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i < len(answers) {
			if answers[i].retryAfter != "" {
				w.Header().Set("Retry-After", answers[i].retryAfter)
			}
			w.WriteHeader(answers[i].status)
			fmt.Fprintf(w, "attempt %d refused", i+1)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

var noJitter = transport.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 10, Cap: time.Second}

func TestRoundTrip(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name         string
		method       string
		maxElapsed   time.Duration
		answers      []answer
		wantStatus   int
		wantAttempts int32
		wantWaits    []time.Duration
	}{{
		name:         "429 with Retry-After seconds, twice",
		answers:      []answer{{429, "2"}, {429, "1"}},
		maxElapsed:   time.Minute,
		wantStatus:   200,
		wantAttempts: 3,
		wantWaits:    []time.Duration{2 * time.Second, time.Second},
	}, {
		name:         "429 with an HTTP date",
		answers:      []answer{{429, start.Add(5 * time.Second).Format(http.TimeFormat)}},
		maxElapsed:   time.Minute,
		wantStatus:   200,
		wantAttempts: 2,
		wantWaits:    []time.Duration{5 * time.Second},
	}, {
		name:         "Retry-After zero still backs off",
		answers:      []answer{{503, "0"}, {503, "0"}},
		maxElapsed:   time.Minute,
		wantStatus:   200,
		wantAttempts: 3,
		wantWaits:    []time.Duration{100 * time.Millisecond, 200 * time.Millisecond},
	}, {
		name:         "5xx without Retry-After backs off exponentially",
		answers:      []answer{{500, ""}, {502, ""}, {504, ""}},
		maxElapsed:   time.Minute,
		wantStatus:   200,
		wantAttempts: 4,
		wantWaits:    []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond},
	}, {
		name:         "budget exhausted hands back the last status",
		answers:      []answer{{500, ""}, {500, ""}, {500, ""}, {500, ""}, {500, ""}},
		maxElapsed:   time.Second,
		wantStatus:   500,
		wantAttempts: 4, // waits 100+200+400ms; the next 800ms would pass 1s
		wantWaits:    []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond},
	}, {
		name:         "Retry-After beyond the budget is not waited for",
		answers:      []answer{{429, "3600"}},
		maxElapsed:   30 * time.Second,
		wantStatus:   429,
		wantAttempts: 1,
	}, {
		name:         "501 is final",
		answers:      []answer{{501, ""}},
		maxElapsed:   time.Minute,
		wantStatus:   501,
		wantAttempts: 1,
	}, {
		name:         "404 is final",
		answers:      []answer{{404, ""}},
		maxElapsed:   time.Minute,
		wantStatus:   404,
		wantAttempts: 1,
	}, {
		name:         "POST is never retried",
		method:       http.MethodPost,
		answers:      []answer{{503, "1"}},
		maxElapsed:   time.Minute,
		wantStatus:   503,
		wantAttempts: 1,
	}, {
		name:         "HEAD is retried",
		method:       http.MethodHead,
		answers:      []answer{{429, "1"}},
		maxElapsed:   time.Minute,
		wantStatus:   200,
		wantAttempts: 2,
		wantWaits:    []time.Duration{time.Second},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, attempts := script(t, tc.answers)
			clock := &fakeClock{at: start}
			rt := New(http.DefaultTransport, tc.maxElapsed, WithBackoff(noJitter), WithClock(clock.now, clock.sleep))
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			var body *strings.Reader
			if method == http.MethodPost {
				body = strings.NewReader("payload")
			}
			req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+"/v2/", nil)
			if body != nil {
				req, err = http.NewRequestWithContext(t.Context(), method, srv.URL+"/v2/", body)
			}
			if err != nil {
				t.Fatal(err)
			}
			resp, err := rt.RoundTrip(req)
			if err != nil {
				t.Fatalf("RoundTrip: %s", err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if got := attempts.Load(); got != tc.wantAttempts {
				t.Errorf("attempts = %d, want %d", got, tc.wantAttempts)
			}
			if diff := cmp.Diff(tc.wantWaits, clock.waits); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBudgetFromContext checks that one budget bounds several requests.
func TestBudgetFromContext(t *testing.T) {
	srv, attempts := script(t, []answer{{429, "4"}, {429, "4"}, {429, "4"}})
	clock := &fakeClock{at: time.Now()}
	rt := New(http.DefaultTransport, time.Hour, WithBackoff(noJitter), WithClock(clock.now, clock.sleep))
	// The budget is measured on the real clock from here; the fake clock
	// starts at the same instant, so 6s of budget allows one 4s wait.
	ctx := WithBudget(t.Context(), 6*time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || attempts.Load() != 2 {
		t.Errorf("got status %d after %d attempts, want 429 after 2", resp.StatusCode, attempts.Load())
	}
	if WithBudget(ctx, time.Hour) != ctx {
		t.Error("WithBudget replaced an outer budget")
	}
}

// TestCancelDuringWait checks that a cancelled context ends a long wait.
func TestCancelDuringWait(t *testing.T) {
	srv, attempts := script(t, []answer{{429, "30"}})
	rt := New(http.DefaultTransport, time.Minute)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for attempts.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	resp, err := rt.RoundTrip(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("RoundTrip succeeded with status %d, want context canceled", resp.StatusCode)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %s, want context canceled", err)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("cancelled wait took %s", took)
	}
}

// TestDroppedConnection checks that a connection closed before any answer is
// retried.
func TestDroppedConnection(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("hijack: %s", err)
				return
			}
			conn.Close()
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	clock := &fakeClock{at: time.Now()}
	rt := New(http.DefaultTransport, time.Minute, WithBackoff(noJitter), WithClock(clock.now, clock.sleep))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %s", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || n.Load() != 2 {
		t.Errorf("got status %d after %d attempts, want 200 after 2", resp.StatusCode, n.Load())
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		header string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"120", 2 * time.Minute, true},
		{" 7 ", 7 * time.Second, true},
		{"-3", 0, false},
		{"soon", 0, false},
		{"1.5", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"Mon, 02 Jan 2006 15:04:05 GMT", 0, true},
		{"Monday, 02-Jan-06 15:04:05 GMT", 0, true},
	} {
		t.Run(tc.header, func(t *testing.T) {
			h := http.Header{}
			if tc.header != "" {
				h.Set("Retry-After", tc.header)
			}
			got, ok := RetryAfter(h, now)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("RetryAfter(%q) = %s, %t; want %s, %t", tc.header, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestRetryable(t *testing.T) {
	got := map[int]bool{}
	for _, code := range []int{200, 301, 400, 401, 403, 404, 408, 429, 500, 501, 502, 503, 504, 505, 599} {
		got[code] = Retryable(code)
	}
	want := map[int]bool{200: false, 301: false, 400: false, 401: false, 403: false, 404: false, 408: false,
		429: true, 500: true, 501: false, 502: true, 503: true, 504: true, 505: false, 599: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Retryable (-want +got):\n%s", diff)
	}
}
