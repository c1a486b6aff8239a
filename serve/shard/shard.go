// Package shard splits serve's apps among its replicas, the way Argo
// CD's application controller splits clusters among its shards: an app
// belongs to one of N shards by the hash of its name (Of), and a
// replica passes the apps of the shards it holds.
//
// Each shard is a Lease, pinbot-shard-K in the state namespace, taken
// and renewed through client-go's leader election: Kubernetes decides
// who holds it, so an app is never passed by two replicas at once. A
// replica announces itself with a Lease of its own, pinbot-member-ID;
// every replica computes the same balanced assignment of shards to the
// members it sees renewing (Assign), asks only for its own shards, and
// gives up a shard that another member should hold. It gives a shard up
// only once the passes of its apps have ended, and it releases nothing
// it was not holding: a replica that dies holds its shards until their
// Leases expire, and the others then take them.
package shard

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// The Leases of sharding, in the state namespace.
const (
	// LeasePrefix names shard K's Lease: pinbot-shard-K.
	LeasePrefix = "pinbot-shard-"
	// MemberPrefix names a replica's member Lease: pinbot-member-ID.
	MemberPrefix = "pinbot-member-"
	// MemberLabel marks the member Leases, for listing them.
	MemberLabel = "pinbot.dev/member"
)

// returnAfter is how long after a shard's work ends its memory goes
// back to the system (term.run): time for its dropped watches to stop.
const returnAfter = 5 * time.Second

// Options say how a Manager shards.
type Options struct {
	// Shards is how many shards the apps are split into; every replica
	// must be given the same number.
	Shards int
	// ID is this replica's identity: the holder of its Leases.
	ID string
	// Namespace holds the Leases.
	Namespace string
	// Duration, RenewDeadline and RetryPeriod time every Lease, as in
	// client-go's leader election: another replica takes a shard whose
	// Lease was not renewed for Duration; its holder stops passing it once
	// it failed to renew for RenewDeadline; replicas try to take or renew
	// every RetryPeriod. A member that did not renew for Duration is gone.
	Duration, RenewDeadline, RetryPeriod time.Duration
}

// Validate checks the options, naming the flag of `pinbot serve` that
// sets each.
func (o Options) Validate() error {
	switch {
	case o.Shards < 1:
		return fmt.Errorf("flag --shards: want at least 1, got %d", o.Shards)
	case o.ID == "":
		return fmt.Errorf("flag --id: empty")
	case o.RetryPeriod <= 0 || o.RenewDeadline <= o.RetryPeriod || o.Duration <= o.RenewDeadline:
		return fmt.Errorf("flags --lease-duration, --renew-deadline, --retry-period: want duration > deadline > period > 0, got %s, %s, %s",
			o.Duration, o.RenewDeadline, o.RetryPeriod)
	}
	return nil
}

// Work passes the apps of shard until stop closes, then returns once the
// pass in flight has ended; ctx ends when the shard's Lease is lost, and
// the pass in flight must then stop at once.
type Work func(ctx context.Context, stop <-chan struct{}, shard int)

// Manager holds this replica's shards and runs their Work.
type Manager struct {
	o    Options
	kube kubernetes.Interface
	work Work
	log  *slog.Logger
	now  func() time.Time

	// watch follows the state namespace's Leases for survey; set by Run
	// before its first survey.
	watch cache.SharedIndexInformer

	mu   sync.Mutex
	held map[int]bool        // the shards whose Work runs now
	seen map[string]sighting // by Lease name
}

// sighting is what this replica last saw of a Lease: its holder and
// renew time, and when, by this replica's clock, they last changed. Comparing
// only this replica's own times, as client-go's elector does, makes the
// members' clocks irrelevant.
type sighting struct {
	renewed string
	at      time.Time
}

// New returns a Manager that runs work for the shards this replica holds.
func New(kube kubernetes.Interface, o Options, work Work, log *slog.Logger) (*Manager, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return &Manager{o: o, kube: kube, work: work, log: log, now: time.Now, held: map[int]bool{}, seen: map[string]sighting{}}, nil
}

// Owns reports whether this replica holds the shard of key now: an
// app's config.App.ShardKey.
func (m *Manager) Owns(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held[Of(key, m.o.Shards)]
}

// Held returns the shards this replica passes now, in order.
func (m *Manager) Held() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int
	for k := range m.o.Shards {
		if m.held[k] {
			out = append(out, k)
		}
	}
	return out
}

func (m *Manager) setHeld(k int, held bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if held {
		m.held[k] = true
	} else {
		delete(m.held, k)
	}
}

// Run takes part in the shards until stop closes, and then gives every
// shard up once its Work has returned, and withdraws the member Lease.
// ctx bounds everything: when it ends, Work's passes are cut off.
//
// It renews the member Lease every retry period, and surveys the Leases
// then, at every change the watch of them reports, and at the moment a
// Lease unrenewed would count as gone: a shard a dead replica held is
// freed after the Lease duration, and the member it is assigned to asks
// for it at once.
func (m *Manager) Run(ctx context.Context, stop <-chan struct{}) {
	terms := map[int]*term{}
	// The surveys of the first retry period only count the members:
	// replicas started together then each see the others before asking
	// for shards, so the first up does not take every shard, pass
	// thousands of apps, and give most back.
	warmAt := m.now().Add(m.o.RetryPeriod)
	tick := time.NewTicker(m.o.RetryPeriod)
	defer tick.Stop()
	watching := make(chan struct{})
	defer close(watching)
	changed := m.watchLeases(watching)
	due := time.NewTimer(m.o.Duration)
	defer due.Stop()
	renew := true
	for {
		if renew {
			if err := m.renewMember(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("renewing the member Lease", "lease", m.o.Namespace+"/"+memberName(m.o.ID), "error", err.Error())
			}
		}
		v, err := m.survey(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			// Keep what is held: the elector of each shard decides alone
			// whether it is still held.
			m.log.Warn("listing the Leases", "namespace", m.o.Namespace, "error", err.Error())
		case err == nil && !m.now().Before(warmAt):
			m.rebalance(ctx, terms, Assign(v.members, m.o.Shards, v.held)[m.o.ID], v)
		}
		if err == nil && !v.next.IsZero() {
			due.Reset(max(v.next.Sub(m.now()), 0))
		}
		select {
		case <-stop:
		case <-ctx.Done():
		case <-tick.C:
			renew = true
			continue
		case <-changed:
			renew = false
			continue
		case <-due.C:
			renew = false
			continue
		}
		break
	}
	for _, t := range terms {
		t.giveUp()
	}
	for _, t := range terms {
		<-t.done
	}
	m.withdraw(context.WithoutCancel(ctx))
}

// rebalance gives up the shards not mine, forgets the terms that ended,
// and starts a term for each shard of mine without one whose Lease no
// one else holds: one held by another is asked for once it is released
// or freed (the survey after sees it), so its first try takes it.
func (m *Manager) rebalance(ctx context.Context, terms map[int]*term, mine []int, v view) {
	want := map[int]bool{}
	for _, k := range mine {
		want[k] = true
	}
	for k, t := range terms {
		select {
		case <-t.done:
			delete(terms, k)
			continue
		default:
		}
		if !want[k] {
			if t.giveUp() {
				m.log.Info("giving a shard up to another member", "shard", k, "members", strings.Join(v.members, ","))
			}
		}
	}
	for _, k := range mine {
		if h, ok := v.held[k]; terms[k] == nil && (!ok || h == m.o.ID) {
			terms[k] = m.start(ctx, k)
		}
	}
}

func memberName(id string) string { return MemberPrefix + leaseSafe(id) }

func shardName(k int) string { return LeasePrefix + strconv.Itoa(k) }

// leaseSafe makes id a valid part of an object's name: lowercase, with
// anything but letters, digits, '-' and '.' as '-'.
func leaseSafe(id string) string {
	b := []byte(strings.ToLower(id))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '.' {
			b[i] = '-'
		}
	}
	return strings.Trim(string(b), "-.")
}
