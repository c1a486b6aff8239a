package record

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/logctx"
)

// priming is the apps whose records one listing reads for the Primes
// called within primeAfter of the first, and its outcome.
type priming struct {
	want map[string]bool
	done chan struct{}
	err  error // once done
}

// primeAfter is how long a listing waits for the Primes called with its
// own (a replica takes its shards at once, a Prime each); primeWithin
// bounds the listing, which outlives the Prime that began it.
const primeAfter, primeWithin = 250 * time.Millisecond, time.Minute

// Prime fills BeginCached's copies of the records of apps (none kept
// for an app without one) with one paginated LIST: the first passes of
// thousands of apps then read nothing more. The Primes called within
// primeAfter of one another share that LIST. Only the process that
// alone writes those records may prime them, as for BeginCached.
func (h *History) Prime(ctx context.Context, apps []string) error {
	h.mu.Lock()
	p := h.priming
	if p == nil {
		p = &priming{want: map[string]bool{}, done: make(chan struct{})}
		h.priming = p
		go h.prime(context.WithoutCancel(ctx), p)
	}
	for _, a := range apps {
		p.want[a] = true
	}
	h.mu.Unlock()
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// prime lists the records for p, once the Primes sharing it are in.
func (h *History) prime(ctx context.Context, p *priming) {
	defer close(p.done)
	time.Sleep(primeAfter)
	h.mu.Lock()
	h.priming = nil // a Prime from now on lists again
	want := p.want
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, primeWithin)
	defer cancel()
	start, listed := time.Now(), 0
	if _, err := h.key.Get(ctx); err != nil { // first: a new key seals what came before
		p.err = fmt.Errorf("priming the records in %s: %w", h.namespace, err)
		return
	}
	found := map[string]*corev1.ConfigMap{}
	opts := metav1.ListOptions{LabelSelector: recordsSelector, Limit: 500}
	for {
		list, err := h.client.CoreV1().ConfigMaps(h.namespace).List(ctx, opts)
		if err != nil {
			p.err = fmt.Errorf("listing the records in %s: %w", h.namespace, err)
			return
		}
		listed += len(list.Items)
		for i := range list.Items {
			cm := list.Items[i]
			if app := cm.Labels["pinbot.dev/history-of"]; want[app] && cm.Name == configMapName(app) {
				if err := h.check(ctx, app, &cm); errors.Is(err, ErrTampered) {
					delete(want, app) // Begin reads it, and writes it back
					continue
				}
				// A copy, not &list.Items[i]: holding an item would
				// keep its whole page, every replica's records, alive.
				cm.ManagedFields = nil // an update without them keeps the server's
				found[app] = &cm
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	now := time.Now()
	logctx.From(ctx).Info("read the records of the apps taken", "apps", len(want), "found", len(found), "listed", listed,
		"took", now.Sub(start).Round(time.Millisecond).String())
	h.mu.Lock()
	defer h.mu.Unlock()
	for a := range want {
		h.cached[a] = cachedRecord{cm: found[a], at: now}
	}
}
