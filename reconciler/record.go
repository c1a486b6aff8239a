package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// HistoryLimit is how many syncs History keeps per app.
const HistoryLimit = 10

// Result is the outcome of one sync.
type Result string

// Sync results.
const (
	// Applied: every object was applied; verification follows.
	Applied Result = "Applied"
	// Failed: an object's apply failed; the entry names it.
	Failed Result = "Failed"
	// Refused: render or guard stopped the sync; nothing was applied.
	Refused Result = "Refused"
)

// Entry is one sync of one commit, and what verification later found.
type Entry struct {
	Commit  string    `json:"commit"`
	Time    time.Time `json:"time"`
	Trigger string    `json:"trigger"` // "auto" (the loop), "manual" (pinbot sync) or "heal"
	Result  Result    `json:"result"`
	Reason  string    `json:"reason,omitempty"`
	Applied int       `json:"applied"` // objects applied
	Health  Health    `json:"health,omitempty"`
	// Pruned are the orphans the sync deleted (see PlanPrune).
	Pruned []ObjectRef `json:"pruned,omitempty"`
	// Healed are the drifted fields (or missing objects) a self-heal
	// restored; its Trigger is TriggerHeal.
	Healed []Drift `json:"healed,omitempty"`
	// Verified and the fields after it are filled in as the rollout
	// proceeds; Final marks the verdict as settled (verified, failed, or
	// timed out).
	Verified   bool          `json:"verified"`
	VerifiedAt *time.Time    `json:"verified_at,omitempty"`
	Summary    string        `json:"summary,omitempty"`
	Digests    []DigestCount `json:"digests,omitempty"`
	Final      bool          `json:"final"`
	// Reported is the last Gitea commit status state posted for the
	// entry; Commented says the pull request got its comment.
	Reported  string `json:"reported,omitempty"`
	Commented bool   `json:"commented,omitempty"`
}

// DigestCount is a verified digest and how many Pods run it.
type DigestCount struct {
	Digest string `json:"digest"`
	Pods   int    `json:"pods"`
}

// Record is what pinbot keeps about one app in the cluster: its last
// status and its last HistoryLimit syncs, newest first.
type Record struct {
	Status  *AppStatus `json:"status,omitempty"`
	Entries []Entry    `json:"entries"`
}

// add puts e first and drops entries beyond HistoryLimit.
func (r *Record) add(e Entry) {
	r.Entries = append([]Entry{e}, r.Entries...)
	if len(r.Entries) > HistoryLimit {
		r.Entries = r.Entries[:HistoryLimit]
	}
}

// latest returns the newest entry, or nil.
func (r *Record) latest() *Entry {
	if len(r.Entries) == 0 {
		return nil
	}
	return &r.Entries[0]
}

// History stores each app's Record in a ConfigMap "pinbot-app-<app>" in
// pinbot's own namespace, so it survives restarts and other processes
// (`pinbot status`, `pinbot history`) can read it. The namespace must
// exist: pinbot's RBAC grants it ConfigMaps there, not Namespaces.
type History struct {
	client    kubernetes.Interface
	namespace string
}

// NewHistory returns a History in namespace.
func NewHistory(client kubernetes.Interface, namespace string) *History {
	return &History{client: client, namespace: namespace}
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
		return fmt.Errorf("%w: %q does not exist: create it (kubectl create namespace %s), apply deploy/ (kubectl apply -k deploy/) or set stateNamespace", ErrNoStateNamespace, h.namespace, h.namespace)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w: pinbot may not write ConfigMaps in %q (missing, or not granted): create it and bind the pinbot-state Role there (deploy/rbac.yaml), or set stateNamespace: %w", ErrNoStateNamespace, h.namespace, err)
	case err != nil:
		return fmt.Errorf("checking history namespace %q: %w", h.namespace, err)
	}
	return nil
}

// Get returns app's record; an app never synced has an empty one.
func (h *History) Get(ctx context.Context, app string) (*Record, error) {
	t, err := h.begin(ctx, app)
	if err != nil {
		return nil, err
	}
	return t.rec, nil
}

func decodeRecord(cm *corev1.ConfigMap) (*Record, error) {
	r := &Record{}
	if s := cm.Data[historyKey]; s != "" {
		if err := json.Unmarshal([]byte(s), &r.Entries); err != nil {
			return nil, fmt.Errorf("decoding %s/%s %s: %w", cm.Namespace, cm.Name, historyKey, err)
		}
	}
	if s := cm.Data[statusKey]; s != "" {
		r.Status = &AppStatus{}
		if err := json.Unmarshal([]byte(s), r.Status); err != nil {
			return nil, fmt.Errorf("decoding %s/%s %s: %w", cm.Namespace, cm.Name, statusKey, err)
		}
	}
	return r, nil
}

// Update reads app's record, lets fn change it, and writes it back when fn
// returns true, retrying on conflicts with concurrent writers.
func (h *History) Update(ctx context.Context, app string, fn func(*Record) bool) error {
	t, err := h.begin(ctx, app)
	if err != nil {
		return fmt.Errorf("writing the history of %s in namespace %q: %w", app, h.namespace, err)
	}
	t.change(fn)
	return t.commit(ctx)
}

// recordTxn is one pass's copy of an app's Record: read once (begin),
// changed in memory (change), written once (commit). A sync pass thus
// makes one GET and at most one PUT of the history ConfigMap. Its changes
// are kept as functions, so a write that conflicts with another writer is
// redone on a fresh read.
type recordTxn struct {
	h   *History
	app string
	// rec is the record as this pass changed it; later steps read it.
	rec *Record
	// cm is the ConfigMap rec was read from, nil when there was none.
	cm      *corev1.ConfigMap
	changes []func(*Record) bool
	dirty   bool
}

// begin reads app's record for a pass.
func (h *History) begin(ctx context.Context, app string) (*recordTxn, error) {
	cm, err := h.client.CoreV1().ConfigMaps(h.namespace).Get(ctx, configMapName(app), metav1.GetOptions{})
	t := &recordTxn{h: h, app: app, rec: &Record{}}
	switch {
	case apierrors.IsNotFound(err):
		return t, nil
	case err != nil:
		return nil, fmt.Errorf("reading the history of %s: %w", app, err)
	}
	if t.rec, err = decodeRecord(cm); err != nil {
		return nil, err
	}
	t.cm = cm
	return t, nil
}

// record adds e to the history. A failed or refused entry for the same
// commit is replaced rather than repeated, so a retried sync does not push
// the other syncs out.
func (t *recordTxn) record(e Entry) {
	t.change(func(rec *Record) bool {
		if l := rec.latest(); l != nil && l.Commit == e.Commit && l.Result != Applied {
			if sameEntry(*l, e) {
				return false
			}
			rec.Entries[0] = e
			return true
		}
		rec.add(e)
		return true
	})
}

// replaceLatest puts e in place of the latest entry when that is still
// the same sync (commit and time) and e says something else about it.
func (t *recordTxn) replaceLatest(e Entry) {
	t.change(func(rec *Record) bool {
		c := rec.latest()
		if c == nil || c.Commit != e.Commit || !c.Time.Equal(e.Time) || sameEntry(*c, e) {
			return false
		}
		rec.Entries[0] = e
		return true
	})
}

// setStatus stores s as the app's status when it says something new
// (see AppStatus.sameAs), without the per-object detail.
func (t *recordTxn) setStatus(s *AppStatus) {
	t.change(func(rec *Record) bool {
		if s.sameAs(rec.Status) {
			return false
		}
		rec.Status = withoutObjects(s)
		return true
	})
}

func withoutObjects(s *AppStatus) *AppStatus {
	c := *s
	c.Objects = nil
	return &c
}

// sameEntry reports whether a and b say the same about a sync.
func sameEntry(a, b Entry) bool {
	return a.Commit == b.Commit && a.Time.Equal(b.Time) && a.Trigger == b.Trigger && a.Result == b.Result &&
		a.Reason == b.Reason && a.Applied == b.Applied && a.Health == b.Health &&
		slices.Equal(a.Pruned, b.Pruned) && slices.EqualFunc(a.Healed, b.Healed, sameDrift) &&
		a.Verified == b.Verified && sameTime(a.VerifiedAt, b.VerifiedAt) && a.Summary == b.Summary &&
		slices.Equal(a.Digests, b.Digests) && a.Final == b.Final && a.Reported == b.Reported && a.Commented == b.Commented
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// sameDrift compares two drifted fields; their values are decoded JSON
// or unstructured content, so numbers compare by value.
func sameDrift(a, b Drift) bool {
	return a.Object == b.Object && a.Path == b.Path && a.Pointer == b.Pointer && a.LiveAbsent == b.LiveAbsent &&
		sameValue(a.Git, b.Git) && sameValue(a.Live, b.Live)
}

// emptyTxn is a record that was not read (a pass that only observes and
// could not read the history); committing it writes nothing unless it
// was changed.
func (h *History) emptyTxn(app string) *recordTxn {
	return &recordTxn{h: h, app: app, rec: &Record{}}
}

// change applies fn to the record now, and again on a fresh read should
// the write conflict; fn returns whether it changed anything.
func (t *recordTxn) change(fn func(*Record) bool) {
	t.changes = append(t.changes, fn)
	if fn(t.rec) {
		t.dirty = true
	}
}

// commit writes the record when a change changed it. On a conflict with
// another writer it reads the record again and replays the changes.
func (t *recordTxn) commit(ctx context.Context) error {
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
			rec = &Record{}
			if cm != nil {
				if rec, err = decodeRecord(cm); err != nil {
					return err
				}
			}
			changed := false
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
		return fmt.Errorf("writing the history of %s in namespace %q: %w", t.app, t.h.namespace, err)
	}
	t.dirty = false
	return nil
}

// write stores rec in cm, creating the ConfigMap when cm is nil, and
// returns the ConfigMap written.
func (t *recordTxn) write(ctx context.Context, cm *corev1.ConfigMap, rec *Record) (*corev1.ConfigMap, error) {
	create := cm == nil
	if create {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: configMapName(t.app), Namespace: t.h.namespace,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "pinbot", "pinbot.dev/history-of": t.app},
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
	cms := t.h.client.CoreV1().ConfigMaps(t.h.namespace)
	if create {
		out, err := cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: FieldManager})
		if apierrors.IsAlreadyExists(err) {
			return nil, apierrors.NewConflict(corev1.Resource("configmaps"), cm.Name, err)
		}
		return out, err
	}
	return cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: FieldManager})
}
