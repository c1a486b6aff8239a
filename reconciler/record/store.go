// Package record keeps pinbot's state in the cluster: each app's record
// (its last status and syncs, see package history) in a ConfigMap
// "pinbot-app-<app>" in pinbot's state namespace. A pass reads an app's
// record once and writes it once (Txn).
package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"pinbot.dev/pinbot/internal/jsonkeys"
	"pinbot.dev/pinbot/internal/sealkey"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/status"
)

// History stores each app's Record in a ConfigMap "pinbot-app-<app>" in
// pinbot's own namespace, so it survives restarts and other processes
// (`pinbot status`, `pinbot history`) can read it. The namespace must
// exist: pinbot's RBAC grants it ConfigMaps there, not Namespaces.
type History struct {
	client    kubernetes.Interface
	namespace string
	key       *sealkey.Key // seals the records (seal.go)

	mu      sync.Mutex
	cached  map[string]cachedRecord // BeginCached's, by app
	follow  follower                // Follow's watch
	priming *priming                // the Primes that share the next listing
}

// cachedRecord is the ConfigMap of an app's record as this History last
// read or wrote it (nil: there was none), and when.
type cachedRecord struct {
	cm *corev1.ConfigMap
	at time.Time
}

// CacheTTL bounds how long BeginCached trusts its copy of a record that
// another process might have written, unless the records are followed
// (Follow).
const CacheTTL = 5 * time.Minute

// New returns a History in namespace.
func New(client kubernetes.Interface, namespace string) *History {
	h := &History{client: client, namespace: namespace, cached: map[string]cachedRecord{}}
	h.key = sealkey.New(client, namespace, KeySecret, h.sealUnsealed)
	return h
}

const (
	historyKey = "history.json"
	statusKey  = "status.json"
)

func configMapName(app string) string { return "pinbot-app-" + app }

// ErrNoStateNamespace is what Check returns (wrapped) when the state
// namespace is missing: nothing can be recorded, so nothing is applied.
var ErrNoStateNamespace = errors.New("state namespace missing")

// Check fails with ErrNoStateNamespace when the history namespace does not
// exist.
func (h *History) Check(ctx context.Context) error {
	_, err := h.client.CoreV1().Namespaces().Get(ctx, h.namespace, metav1.GetOptions{})
	if apierrors.IsForbidden(err) {
		// A ServiceAccount may read only its own namespace (deploy/ grants
		// get on pinbot-system alone): ask through the verb pinbot needs
		// anyway, a dry-run create of a ConfigMap there, which fails
		// NotFound when the namespace is missing.
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "pinbot-check-"}}
		_, err = h.client.CoreV1().ConfigMaps(h.namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	}
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: %q does not exist: create it (kubectl create namespace %s), apply deploy/ (kubectl apply -k deploy/overlays/example) or set stateNamespace", ErrNoStateNamespace, h.namespace, h.namespace)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w: pinbot may not write ConfigMaps in %q (missing, or not granted): create it and bind the pinbot-state Role there (deploy/base/rbac.yaml), or set stateNamespace: %w", ErrNoStateNamespace, h.namespace, err)
	case err != nil:
		return fmt.Errorf("checking history namespace %q: %w", h.namespace, err)
	}
	return nil
}

// Get returns app's record; an app never synced has an empty one, and
// one changed outside pinbot is ErrTampered. While Follow's watch says
// the copy this History holds is the record's version, Get answers from
// it, its seal checked again, without a request: the release page and
// the chains read the records of every app they show, over and over.
func (h *History) Get(ctx context.Context, app string) (*history.Record, error) {
	if _, err := h.key.Get(ctx); err != nil { // first: a new key seals what came before
		return nil, fmt.Errorf("reading the history of %s: %w", app, err)
	}
	h.mu.Lock()
	c, ok := h.cached[app]
	h.mu.Unlock()
	following, current := h.watched(app, c.cm)
	if ok && current {
		if c.cm == nil {
			return &history.Record{}, nil
		}
		return h.open(ctx, app, c.cm)
	}
	cm, err := h.client.CoreV1().ConfigMaps(h.namespace).Get(ctx, configMapName(app), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return &history.Record{}, nil
	case err != nil:
		return nil, fmt.Errorf("reading the history of %s: %w", app, err)
	}
	rec, err := h.open(ctx, app, cm)
	if err == nil && following {
		cm.ManagedFields = nil // an update without them keeps the server's
		h.remember(app, cm)
	}
	return rec, err
}

func decodeRecord(cm *corev1.ConfigMap) (*history.Record, error) {
	r := &history.Record{}
	if s := cm.Data[historyKey]; s != "" {
		if err := jsonkeys.Unmarshal([]byte(s), &r.Entries); err != nil {
			return nil, fmt.Errorf("decoding %s/%s %s: %w", cm.Namespace, cm.Name, historyKey, err)
		}
	}
	if s := cm.Data[statusKey]; s != "" {
		r.Status = &status.App{}
		if err := jsonkeys.Unmarshal([]byte(s), r.Status); err != nil {
			return nil, fmt.Errorf("decoding %s/%s %s: %w", cm.Namespace, cm.Name, statusKey, err)
		}
	}
	return r, nil
}

// Update reads app's record, lets fn change it, and writes it back when fn
// returns true, retrying on conflicts with concurrent writers.
func (h *History) Update(ctx context.Context, app string, fn func(*history.Record) bool) error {
	t, err := h.Begin(ctx, app)
	if err != nil {
		return fmt.Errorf("writing the history of %s in namespace %q: %w", app, h.namespace, err)
	}
	t.Change(fn)
	return t.Commit(ctx)
}

// Txn is one pass's copy of an app's Record: read once (Begin), changed
// in memory (Add, Replace, SetStatus, Change), written once (Commit). A sync pass thus
// makes one GET and at most one PUT of the history ConfigMap. Its changes
// are kept as functions, so a write that conflicts with another writer is
// redone on a fresh read.
type Txn struct {
	h   *History
	app string
	// rec is the record as this pass changed it; later steps read it.
	rec *history.Record
	// cm is the ConfigMap rec was read from, nil when there was none.
	cm      *corev1.ConfigMap
	changes []func(*history.Record) bool
	dirty   bool // to be written: changed, or changed outside pinbot
}

// Begin reads app's record for a pass, as the process that writes it:
// a record changed outside pinbot is written back at Commit (trusted).
func (h *History) Begin(ctx context.Context, app string) (*Txn, error) {
	if _, err := h.key.Get(ctx); err != nil { // first: a new key seals what came before
		return nil, fmt.Errorf("reading the history of %s: %w", app, err)
	}
	cm, err := h.client.CoreV1().ConfigMaps(h.namespace).Get(ctx, configMapName(app), metav1.GetOptions{})
	t := &Txn{h: h, app: app, rec: &history.Record{}}
	switch {
	case apierrors.IsNotFound(err):
		h.remember(app, nil)
		return t, nil
	case err != nil:
		return nil, fmt.Errorf("reading the history of %s: %w", app, err)
	}
	if t.rec, t.dirty, err = h.trusted(ctx, app, cm); err != nil {
		return nil, err
	}
	t.cm = cm
	if !t.dirty {
		h.remember(app, cm)
	}
	return t, nil
}

// BeginCached is Begin for the process that alone writes app's record
// (serve's leader, or the holder of the app's shard): it starts from the
// record as this History last read or wrote it (every Begin and Commit
// keeps it), without reading it again, so an idle pass costs the API
// server nothing. It trusts that copy while the watch of Follow has seen
// no other version of the record, or, without the watch, within
// CacheTTL. Another writer's change meanwhile makes this pass's write
// conflict, and the write is then redone on a fresh read, as always.
func (h *History) BeginCached(ctx context.Context, app string) (*Txn, error) {
	h.mu.Lock()
	c, ok := h.cached[app]
	h.mu.Unlock()
	trust := ok && time.Since(c.at) < CacheTTL
	if following, current := h.watched(app, c.cm); ok && following {
		trust = current
	}
	if trust {
		t := &Txn{h: h, app: app, rec: &history.Record{}}
		if c.cm != nil {
			rec, err := decodeRecord(c.cm)
			if err != nil {
				return nil, err
			}
			t.rec, t.cm = rec, c.cm
		}
		return t, nil
	}
	return h.Begin(ctx, app)
}

// Forget drops BeginCached's copy of app's record: another process
// writes it from now on.
func (h *History) Forget(app string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.cached, app)
}

// Ref is the reference of app's record ConfigMap, for an Event: with its
// UID once this History read or wrote it.
func (h *History) Ref(app string) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: h.namespace, Name: configMapName(app)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.cached[app]; ok && c.cm != nil {
		ref.UID, ref.ResourceVersion = c.cm.UID, c.cm.ResourceVersion
	}
	return ref
}

func (h *History) remember(app string, cm *corev1.ConfigMap) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cached[app] = cachedRecord{cm: cm, at: time.Now()}
}

// Current is the record as this pass changed it so far.
func (t *Txn) Current() *history.Record { return t.rec }

// Add adds e to the history. A failed or refused entry for the same
// commit is replaced rather than repeated, so a retried sync does not push
// the other syncs out.
func (t *Txn) Add(e history.Entry) {
	t.Change(func(rec *history.Record) bool {
		if l := rec.Latest(); l != nil && l.Commit == e.Commit && l.Result != history.Applied {
			if history.Same(*l, e) {
				return false
			}
			rec.Entries[0] = e
			return true
		}
		rec.Push(e)
		return true
	})
}

// Replace puts e in place of the latest entry when that is still the
// same sync (commit and time) and e says something else about it.
func (t *Txn) Replace(e history.Entry) {
	t.Change(func(rec *history.Record) bool {
		c := rec.Latest()
		if c == nil || c.Commit != e.Commit || !c.Time.Equal(e.Time) || history.Same(*c, e) {
			return false
		}
		rec.Entries[0] = e
		return true
	})
}

// SetStatus stores s as the app's status when it says something new
// (see status.App.SameAs), without the per-object detail.
func (t *Txn) SetStatus(s *status.App) {
	t.Change(func(rec *history.Record) bool {
		if s.SameAs(rec.Status) {
			return false
		}
		rec.Status = status.WithoutObjects(s)
		return true
	})
}

// Empty is a record that was not read (a pass that only observes and
// could not read the history); committing it writes nothing unless it
// was changed.
func (h *History) Empty(app string) *Txn {
	return &Txn{h: h, app: app, rec: &history.Record{}}
}

// Change applies fn to the record now, and again on a fresh read should
// the write conflict; fn returns whether it changed anything.
func (t *Txn) Change(fn func(*history.Record) bool) {
	t.changes = append(t.changes, fn)
	if fn(t.rec) {
		t.dirty = true
	}
}

// Commit writes the record when a change changed it. On a conflict with
// another writer it reads the record again and replays the changes.
func (t *Txn) Commit(ctx context.Context) error {
	if !t.dirty {
		return nil
	}
	cms := t.h.client.CoreV1().ConfigMaps(t.h.namespace)
	first := true
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cm, rec := t.cm, t.rec
		if !first {
			var err error
			cm, err = cms.Get(ctx, configMapName(t.app), metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				cm = nil
			case err != nil:
				return err
			}
			rec = &history.Record{}
			changed := false
			if cm != nil {
				if rec, changed, err = t.h.trusted(ctx, t.app, cm); err != nil {
					return err
				}
			}
			for _, fn := range t.changes {
				changed = fn(rec) || changed
			}
			if !changed {
				return nil
			}
		}
		first = false
		out, err := t.write(ctx, cm, rec)
		if err == nil {
			t.cm, t.rec = out, rec
		}
		return err
	})
	if err != nil {
		t.h.Forget(t.app)
		return fmt.Errorf("writing the history of %s in namespace %q: %w", t.app, t.h.namespace, err)
	}
	t.dirty = false
	t.h.remember(t.app, t.cm)
	return nil
}

// write stores rec in cm, creating the ConfigMap when cm is nil, and
// returns the ConfigMap written.
func (t *Txn) write(ctx context.Context, cm *corev1.ConfigMap, rec *history.Record) (*corev1.ConfigMap, error) {
	create := cm == nil
	if create {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: configMapName(t.app), Namespace: t.h.namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "pinbot", historyOfLabel: t.app},
		}}
	} else {
		cm = cm.DeepCopy()
	}
	hist, err := json.Marshal(rec.Entries)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", historyKey, err)
	}
	cm.Data = map[string]string{historyKey: string(hist)}
	if rec.Status != nil {
		st, err := json.Marshal(rec.Status)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", statusKey, err)
		}
		cm.Data[statusKey] = string(st)
	}
	if err := t.h.seal(ctx, t.app, cm.Data); err != nil {
		return nil, fmt.Errorf("sealing: %w", err)
	}
	cms := t.h.client.CoreV1().ConfigMaps(t.h.namespace)
	if create {
		out, err := cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: object.FieldManager})
		if apierrors.IsAlreadyExists(err) {
			return nil, apierrors.NewConflict(corev1.Resource("configmaps"), cm.Name, err)
		}
		return out, err
	}
	return cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: object.FieldManager})
}
