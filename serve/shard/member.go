package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// renewMember stamps this replica's member Lease with the time, creating
// it when missing.
func (m *Manager) renewMember(ctx context.Context) error {
	now := metav1.NewMicroTime(m.now())
	secs := int32(m.o.Duration / time.Second)
	leases := m.kube.CoordinationV1().Leases(m.o.Namespace)
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"holderIdentity": m.o.ID, "renewTime": now, "leaseDurationSeconds": secs}})
	if err != nil {
		return err
	}
	_, err = leases.Patch(ctx, memberName(m.o.ID), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "pinbot"})
	if !apierrors.IsNotFound(err) {
		return err
	}
	id := m.o.ID
	_, err = leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: memberName(id), Namespace: m.o.Namespace, Labels: map[string]string{MemberLabel: "true"}},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &id, RenewTime: &now, AcquireTime: &now, LeaseDurationSeconds: &secs},
	}, metav1.CreateOptions{FieldManager: "pinbot"})
	return err
}

// view is what a survey found.
type view struct {
	// members renew their Leases, this replica always among them, sorted.
	members []string
	// held is the holder of each shard whose Lease is renewed.
	held map[int]string
	// next is when a Lease seen now would count as gone if not renewed
	// (zero: none would).
	next time.Time
}

// survey lists the state namespace's Leases: it returns the view they
// give, and it frees the shards whose holder is gone. A member is gone
// once its Lease went unrenewed for the Lease duration, by this
// replica's clock; a member Lease gone for twice as long is deleted, so
// the replicas a Deployment replaced leave no trace.
func (m *Manager) survey(ctx context.Context) (view, error) {
	leases := m.kube.CoordinationV1().Leases(m.o.Namespace)
	items, err := m.leases(ctx)
	if err != nil {
		return view{}, err
	}
	now := m.now()
	out := []string{m.o.ID}
	v := view{held: map[int]string{}}
	gone := func(idle time.Duration) {
		if at := now.Add(m.o.Duration - idle); v.next.IsZero() || at.Before(v.next) {
			v.next = at
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	current := map[string]bool{}
	for _, l := range items {
		member := l.Labels[MemberLabel] == "true" && strings.HasPrefix(l.Name, MemberPrefix)
		if !member && !strings.HasPrefix(l.Name, LeasePrefix) {
			continue
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil {
			continue
		}
		current[l.Name] = true
		idle := m.sight(l, now, member)
		if !member {
			k, err := strconv.Atoi(strings.TrimPrefix(l.Name, LeasePrefix))
			switch {
			case idle >= m.o.Duration:
				m.free(ctx, l)
			case err == nil:
				v.held[k] = *l.Spec.HolderIdentity
				if v.held[k] != m.o.ID {
					gone(idle)
				}
			}
			continue
		}
		switch id := *l.Spec.HolderIdentity; {
		case id == m.o.ID:
		case idle < m.o.Duration:
			out = append(out, id)
			gone(idle)
		case idle > 2*m.o.Duration:
			rv := l.ResourceVersion
			err := leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				m.log.Debug("deleting a gone member's Lease", "lease", m.o.Namespace+"/"+l.Name, "error", err.Error())
			}
		}
	}
	for name := range m.seen {
		if !current[name] {
			delete(m.seen, name)
		}
	}
	slices.Sort(out)
	v.members = slices.Compact(out)
	return v, nil
}

// leases are the state namespace's Leases: from the watch Run keeps once
// its first LIST is in (so an idle replica's survey costs the API server
// nothing), by a LIST of their own before.
func (m *Manager) leases(ctx context.Context) ([]*coordinationv1.Lease, error) {
	if w := m.watch; w != nil && w.HasSynced() {
		var out []*coordinationv1.Lease
		for _, o := range w.GetStore().List() {
			if l, ok := o.(*coordinationv1.Lease); ok {
				out = append(out, l)
			}
		}
		return out, nil
	}
	list, err := m.kube.CoordinationV1().Leases(m.o.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*coordinationv1.Lease, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// watchLeases starts the watch of the state namespace's Leases that
// survey reads, until stop closes. The channel it returns has a value
// whenever a Lease changed since it was last read.
func (m *Manager) watchLeases(stop <-chan struct{}) <-chan struct{} {
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	f := informers.NewSharedInformerFactoryWithOptions(m.kube, 0, informers.WithNamespace(m.o.Namespace))
	m.watch = f.Coordination().V1().Leases().Informer()
	_, _ = m.watch.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(_, _ any) { poke() },
		DeleteFunc: func(any) { poke() },
	}) // fails only once the informer has stopped
	go m.watch.Run(stop)
	return changed
}

// sight notes what l says now and returns how long, by this replica's
// clock, it has gone unrenewed. On first sight a member's renew time is
// trusted to call it gone at once, so a replica starting up does not
// wait on the dead; a shard's never is, since freeing a shard must not
// depend on the members' clocks agreeing.
func (m *Manager) sight(l *coordinationv1.Lease, now time.Time, member bool) time.Duration {
	renewed := *l.Spec.HolderIdentity + " " + l.Spec.RenewTime.Format(time.RFC3339Nano)
	s, ok := m.seen[l.Name]
	switch {
	case !ok:
		s = sighting{renewed: renewed, at: now}
		if member && now.Sub(l.Spec.RenewTime.Time) > m.o.Duration {
			s.at = l.Spec.RenewTime.Time
		}
	case s.renewed != renewed:
		s = sighting{renewed: renewed, at: now}
	}
	m.seen[l.Name] = s
	return now.Sub(s.at)
}

// free clears the holder of a shard's Lease that went unrenewed for the
// Lease duration: its holder stopped passing the shard by its renew
// deadline, earlier still. client-go's elector takes an expired Lease
// only after watching it for a whole Lease duration itself; a cleared one
// it takes at once, so the member the shard is assigned to takes it as
// soon as its watch reports the change (rebalance starts its term then).
// The update carries the resourceVersion seen: a holder
// that renewed meanwhile keeps the shard.
func (m *Manager) free(ctx context.Context, l *coordinationv1.Lease) {
	l = l.DeepCopy()
	holder := *l.Spec.HolderIdentity
	none := ""
	l.Spec.HolderIdentity = &none
	_, err := m.kube.CoordinationV1().Leases(m.o.Namespace).Update(ctx, l, metav1.UpdateOptions{FieldManager: "pinbot"})
	switch {
	case err == nil:
		m.log.Info("freed a shard whose holder stopped renewing it", "lease", m.o.Namespace+"/"+l.Name, "holder", holder)
		delete(m.seen, l.Name)
	case !apierrors.IsConflict(err) && !apierrors.IsNotFound(err):
		m.log.Warn("freeing a shard whose holder stopped renewing it", "lease", m.o.Namespace+"/"+l.Name, "error", err.Error())
	}
}

// withdraw deletes this replica's member Lease, so the others rebalance
// at once rather than after the Lease duration.
func (m *Manager) withdraw(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, m.o.RetryPeriod)
	defer cancel()
	err := m.kube.CoordinationV1().Leases(m.o.Namespace).Delete(ctx, memberName(m.o.ID), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		m.log.Warn("withdrawing the member Lease", "lease", m.o.Namespace+"/"+memberName(m.o.ID), "error", fmt.Sprint(err))
	}
}
