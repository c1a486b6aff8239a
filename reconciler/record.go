package reconciler

import (
	"context"
	"encoding/json"
	"fmt"
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

// Check fails when the history namespace does not exist.
func (h *History) Check(ctx context.Context) error {
	_, err := h.client.CoreV1().Namespaces().Get(ctx, h.namespace, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("history namespace %q does not exist: create it (deploy/namespace.yaml) or set stateNamespace", h.namespace)
	case err != nil && !apierrors.IsForbidden(err):
		return fmt.Errorf("checking history namespace %q: %w", h.namespace, err)
	}
	return nil
}

// Get returns app's record; an app never synced has an empty one.
func (h *History) Get(ctx context.Context, app string) (*Record, error) {
	cm, err := h.client.CoreV1().ConfigMaps(h.namespace).Get(ctx, configMapName(app), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return &Record{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the history of %s: %w", app, err)
	}
	return decodeRecord(cm)
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
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cms := h.client.CoreV1().ConfigMaps(h.namespace)
		cm, err := cms.Get(ctx, configMapName(app), metav1.GetOptions{})
		create := apierrors.IsNotFound(err)
		if err != nil && !create {
			return err
		}
		if create {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: configMapName(app), Namespace: h.namespace,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "pinbot", "pinbot.dev/history-of": app},
			}}
		}
		r, err := decodeRecord(cm)
		if err != nil {
			return err
		}
		if !fn(r) {
			return nil
		}
		hist, err := json.Marshal(r.Entries)
		if err != nil {
			return err
		}
		cm.Data = map[string]string{historyKey: string(hist)}
		if r.Status != nil {
			st, err := json.Marshal(r.Status)
			if err != nil {
				return err
			}
			cm.Data[statusKey] = string(st)
		}
		if create {
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: FieldManager})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(corev1.Resource("configmaps"), cm.Name, err)
			}
			return err
		}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: FieldManager})
		return err
	})
	if err != nil {
		return fmt.Errorf("writing the history of %s in namespace %q: %w", app, h.namespace, err)
	}
	return nil
}
