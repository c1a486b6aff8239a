package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"pinbot.dev/pinbot/release"
)

// read is a ledger as Read last parsed it from the watch, by the
// ConfigMap's resource version.
type read struct {
	rv     string
	ledger *release.Ledger
}

// Watch keeps the ledgers' ConfigMaps in memory from a watch until ctx
// ends, for Read: the readers that ask on every request (the admission
// webhook, the gate endpoint, the page) then cost the API server nothing,
// so a flood of them neither waits on it nor throttles serve's writes.
// Read answers from the API server until the first list is in.
func (s *Ledgers) Watch(ctx context.Context) {
	factory := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informers.WithNamespace(s.namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelRepository + "=true" }))
	configMaps := factory.Core().V1().ConfigMaps()
	lister, informer := configMaps.Lister(), configMaps.Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.witness(ctx, obj) },
		UpdateFunc: func(_, obj any) { s.witness(ctx, obj) },
	}); err != nil {
		return
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return
	}
	s.mu.Lock()
	s.lister = lister
	s.mu.Unlock()
	<-ctx.Done()
	s.mu.Lock()
	s.lister = nil
	s.mu.Unlock()
	factory.Shutdown()
}

// Read returns repository's ledger for reading only: as the watch has it
// (see Watch), checked as Get checks it, or the version this Ledgers
// wrote or read since, when the watch lags behind it. The ledger is
// shared by every Read of that version: the caller must not change it,
// nor write it back (Get and Put do that).
func (s *Ledgers) Read(ctx context.Context, repository string) (*release.Ledger, error) {
	s.mu.Lock()
	lister := s.lister
	s.mu.Unlock()
	if lister == nil {
		l, _, err := s.Get(ctx, repository)
		return l, err
	}
	cm, err := lister.ConfigMaps(s.namespace).Get(Name(repository))
	if err != nil {
		// None yet, an older pinbot's name, or a deletion: Get tells.
		l, _, err := s.Get(ctx, repository)
		return l, err
	}
	key := strings.ToLower(repository)
	s.mu.Lock()
	last, seen := s.seen[key]
	parsed, ok := s.reads[key]
	s.mu.Unlock()
	if ok && parsed.rv == cm.ResourceVersion {
		return parsed.ledger, nil
	}
	if seq, err := strconv.ParseUint(cm.Data[seqField], 10, 64); err == nil && seen && seq < last.seq {
		// Behind this Ledgers' own write, or a replay: Get tells.
		l, _, err := s.Get(ctx, repository)
		return l, err
	}
	if _, err := s.verify(ctx, repository, cm); err != nil {
		return nil, err
	}
	l, err := release.Parse([]byte(cm.Data[ledgerKey]))
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", s.namespace, cm.Name, err)
	}
	s.mu.Lock()
	s.reads[key] = read{rv: cm.ResourceVersion, ledger: l}
	s.mu.Unlock()
	return l, nil
}

// witness checks each version of a ledger the watch delivers, in order,
// as a read would: a correctly sealed one is then the version Restore
// writes back. So a hold a person lifted with the CLI stays lifted when
// a ConfigMap writer edits the ledger a moment later, though no one read
// it in between. A version that fails the check is left to the readers,
// which refuse it.
func (s *Ledgers) witness(ctx context.Context, obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	repository := cm.Annotations[annotationRepository]
	if repository == "" || Name(repository) != cm.Name {
		return
	}
	_, _ = s.verify(ctx, repository, cm)
}
