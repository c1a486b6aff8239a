package record

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

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
// for an app without one) with a few LISTs that select those records by
// their label, a few at once: the first passes of thousands of apps then
// read nothing more, and a replica taking a shard over is sent its
// apps' records only, not every replica's. The Primes called within
// primeAfter of one another share those LISTs. Only the process that
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
	var mu sync.Mutex // guards found, listed and want from here on
	found := map[string]*corev1.ConfigMap{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(primeLists)
	for _, sel := range selectors(want) {
		g.Go(func() error {
			list, err := h.client.CoreV1().ConfigMaps(h.namespace).List(gctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return fmt.Errorf("listing the records in %s: %w", h.namespace, err)
			}
			mu.Lock()
			defer mu.Unlock()
			listed += len(list.Items)
			for i := range list.Items {
				cm := list.Items[i]
				if app := cm.Labels[historyOfLabel]; want[app] && cm.Name == configMapName(app) {
					if err := h.check(ctx, app, &cm); errors.Is(err, ErrTampered) {
						delete(want, app) // Begin reads it, and writes it back
						continue
					}
					// A copy, not &list.Items[i]: holding an item would
					// keep its whole listing alive.
					cm.ManagedFields = nil // an update without them keeps the server's
					found[app] = &cm
				}
			}
			return nil
		})
	}
	if p.err = g.Wait(); p.err != nil {
		return
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

// primeLists bounds the listings one Prime makes at once, and
// selectorBytes the app names one of them asks for: a label selector is
// part of the request's URL.
const primeLists, selectorBytes = 4, 4096

// selectors are the label selectors that ask for the records of the
// apps of want, the apps' names split among them; an app whose name no
// label can carry has no record, and leaves want.
func selectors(want map[string]bool) []string {
	var names []string
	for app := range want {
		if len(validation.IsValidLabelValue(app)) > 0 {
			delete(want, app)
			continue
		}
		names = append(names, app)
	}
	slices.Sort(names)
	var out []string
	for len(names) > 0 {
		n, size := 0, 0
		for n < len(names) && (n == 0 || size+len(names[n])+1 <= selectorBytes) {
			size += len(names[n]) + 1
			n++
		}
		out = append(out, recordsSelector+","+historyOfLabel+" in ("+strings.Join(names[:n], ",")+")")
		names = names[n:]
	}
	return out
}
