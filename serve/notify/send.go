package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
)

// Defaults of a Notifier.
const (
	// QueueSize bounds the events waiting for one target.
	QueueSize = 256
	// Attempts bounds the deliveries of one event.
	Attempts = 5
	// FirstBackoff is the wait after the first failure; it doubles.
	FirstBackoff = time.Second
	// SignatureHeader carries the json format's HMAC-SHA256 signature.
	SignatureHeader = "X-Pinbot-Signature-256"
)

// Notifier sends events to its targets, each from its own queue.
type Notifier struct {
	o       Options
	senders []*sender
	sent    *prometheus.CounterVec // pinbot_notifications_total
	log     *slog.Logger
	wg      sync.WaitGroup
}

type sender struct {
	t     *Target
	queue chan Event
	hc    *http.Client
}

// Options tune a Notifier; zero values take the defaults.
type Options struct {
	QueueSize    int
	Attempts     int
	FirstBackoff time.Duration
	// HTTP is the client; default one with a 10 s timeout that drops
	// credentials on a redirect to another origin.
	HTTP *http.Client
	// Log is where failures are logged; default the logger of Run's ctx.
	Log *slog.Logger
}

// New reads the targets' files and returns their Notifier; Run starts
// its senders. An error names the target and its file.
func New(targets []Target, o Options) (*Notifier, error) {
	if o.QueueSize <= 0 {
		o.QueueSize = QueueSize
	}
	if o.Attempts <= 0 {
		o.Attempts = Attempts
	}
	if o.FirstBackoff <= 0 {
		o.FirstBackoff = FirstBackoff
	}
	if o.HTTP == nil {
		o.HTTP = client()
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler) // until Run takes ctx's
	}
	n := &Notifier{o: o, log: log, sent: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_notifications_total",
		Help: "Notifications by target and result: sent, failed (every attempt failed) or dropped (the queue was full).",
	}, []string{"target", "result"})}
	for i := range targets {
		t := targets[i]
		if err := t.open(); err != nil {
			return nil, err
		}
		n.senders = append(n.senders, &sender{t: &t, queue: make(chan Event, o.QueueSize), hc: o.HTTP})
	}
	return n, nil
}

// Run starts the senders, which deliver until ctx ends; events sent
// before wait in the queues.
func (n *Notifier) Run(ctx context.Context) {
	if n == nil {
		return
	}
	if n.o.Log == nil {
		n.log = logctx.From(ctx)
	}
	for _, s := range n.senders {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.run(ctx, s, n.o)
		}()
	}
}

// Collector is the Notifier's metric, for /metrics.
func (n *Notifier) Collector() prometheus.Collector { return n.sent }

// Send queues e for every target that wants it, never blocking: a full
// queue drops it, counted.
func (n *Notifier) Send(e Event) {
	if n == nil {
		return
	}
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	for _, s := range n.senders {
		if !s.t.wants(e) {
			continue
		}
		select {
		case s.queue <- e:
		default:
			n.sent.WithLabelValues(s.t.Name, "dropped").Inc()
			n.log.Warn("notification dropped: the queue is full", "target", s.t.Name, "reason", e.Reason)
		}
	}
}

// Wait waits for the senders to end, after ctx ended.
func (n *Notifier) Wait() {
	if n != nil {
		n.wg.Wait()
	}
}

// run delivers s's queue, in order, until ctx ends.
func (n *Notifier) run(ctx context.Context, s *sender, o Options) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-s.queue:
			err := s.deliver(ctx, e, o)
			result := "sent"
			if err != nil {
				result = "failed"
				n.log.Warn("notification not delivered", "target", s.t.Name, "reason", e.Reason, "error", redact.String(err.Error()))
			}
			n.sent.WithLabelValues(s.t.Name, result).Inc()
		}
	}
}

// deliver posts e, retrying a failure (no answer, 408, 429, 5xx) with a
// doubling backoff, up to o.Attempts times.
func (s *sender) deliver(ctx context.Context, e Event, o Options) error {
	body, err := s.body(e)
	if err != nil {
		return err
	}
	wait := o.FirstBackoff
	for attempt := 1; ; attempt++ {
		retry, err := s.post(ctx, body)
		if err == nil || !retry || attempt == o.Attempts {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// body is e in the target's format.
func (s *sender) body(e Event) ([]byte, error) {
	if s.t.Format == FormatSlack {
		return json.Marshal(map[string]string{"text": e.text()})
	}
	return json.Marshal(e)
}

// post posts body once; retry says whether a failure may pass.
func (s *sender) post(ctx context.Context, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.t.url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "pinbot")
	if s.t.secret != "" {
		mac := hmac.New(sha256.New, []byte(s.t.secret))
		mac.Write(body)
		req.Header.Set(SignatureHeader, "sha256="+hex.EncodeToString(mac.Sum(nil)))
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return true, fmt.Errorf("posting to %s: %w", redact.URL(s.t.url), err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return true, fmt.Errorf("posting to %s: HTTP %d", redact.URL(s.t.url), resp.StatusCode)
	}
	return false, fmt.Errorf("posting to %s: HTTP %d", redact.URL(s.t.url), resp.StatusCode)
}

// client is the default notification client: it follows no redirect. A
// redirect would carry the signed body elsewhere, and name a Slack URL's
// secret path in its Referer; a 3xx is a failed delivery instead.
func client() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}
