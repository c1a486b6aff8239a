// Package proofs publishes each app's proof as a Proof object
// (proofs.pinbot.dev/v1), so that any deployer's waves can wait on it:
// Argo CD through a health check, Flux through kstatus. Its conditions
// follow kstatus: Ready is True only while every current Pod runs the
// digests Git pins and every container is Ready; Reconciling is True
// while a rollout or a proof is pending, Stalled on a mismatch or a
// container that will not start.
// A Proof is written when the proof changes, never on a pass that
// changed nothing.
package proofs

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// The Proof kind.
var (
	GVR = schema.GroupVersionResource{Group: "pinbot.dev", Version: "v1", Resource: "proofs"}
	GVK = schema.GroupVersionKind{Group: "pinbot.dev", Version: "v1", Kind: "Proof"}
)

// ErrNoCRD means the cluster serves no Proof kind.
var ErrNoCRD = errors.New("the cluster has no Proof CustomResourceDefinition")

// NoCRDError is ErrNoCRD of the named cluster ("" for pinbot's own).
type NoCRDError struct{ Cluster string }

func (e *NoCRDError) Error() string {
	return cmp.Or(e.Cluster, "pinbot's own cluster") + ": " + ErrNoCRD.Error()
}
func (e *NoCRDError) Unwrap() error { return ErrNoCRD }

// MismatchGrace is how long a Mismatch is Reconciling before it is
// Stalled: a rollout's first pass may see the workload's Pods before the
// object that declares the new digest (a watch cache behind the apply),
// and a Stalled Proof fails a Flux wave at once.
const MismatchGrace = 30 * time.Second

// FieldManager owns what pinbot writes of a Proof.
const FieldManager = "pinbot-proof"

// The conditions of a Proof, as kstatus reads them.
const (
	Ready       = "Ready"
	Reconciling = "Reconciling"
	Stalled     = "Stalled"
)

// Status is a Proof's status.
type Status struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions"`
	// App is pinbot's app; Commit the commit whose pins it proves.
	App    string `json:"app"`
	Commit string `json:"commit,omitempty"`
	// Pinned are the digests Git pins; Running those the current Pods
	// run, as the runtimes reported them.
	Pinned  []string `json:"pinned,omitempty"`
	Running []string `json:"running,omitempty"`
	// Summary is the proof in one line.
	Summary string `json:"summary,omitempty"`
}

// Of is the status of app's Proof after the pass that left s and v.
func Of(app string, s *status.App, v *verdict.Verification) Status {
	out := Status{App: app}
	if s == nil {
		out.Conditions = conditions(metav1.ConditionUnknown, "NoPass", "pinbot has not passed the app yet", false)
		return out
	}
	out.Commit, out.Summary = s.Commit, s.Verification
	if v != nil {
		for _, c := range v.Containers {
			if c.GitDigest != "" && !slices.Contains(out.Pinned, c.GitDigest) {
				out.Pinned = append(out.Pinned, c.GitDigest)
			}
			if c.RunningDigest != "" && !slices.Contains(out.Running, c.RunningDigest) {
				out.Running = append(out.Running, c.RunningDigest)
			}
		}
	}
	slices.Sort(out.Pinned)
	slices.Sort(out.Running)
	reason, msg := string(s.Proof), s.Verification
	if reason == "" {
		reason = string(verdict.Pending)
	}
	// The containers' own readiness, not the app's health: an Argo CD
	// app's health (and a pinbot app's, when Git holds its Proof)
	// includes the Proof itself.
	ready, stuck := v != nil && len(v.Containers) > 0, ""
	if v != nil {
		for _, c := range v.Containers {
			ready = ready && c.Ready
			if stuck == "" && slices.Contains(stuckReasons, c.Waiting) {
				stuck = c.Namespace + "/" + c.Pod + " " + c.Container + ": " + c.Waiting
			}
		}
	}
	switch {
	case s.Error != "":
		out.Conditions = conditions(metav1.ConditionFalse, "PassFailed", s.Error, false)
	case s.Proof == verdict.Mismatch:
		out.Conditions = conditions(metav1.ConditionFalse, reason, msg, true)
	case stuck != "":
		out.Conditions = conditions(metav1.ConditionFalse, "Degraded", stuck, true)
	case s.Proof == verdict.Verified && ready:
		out.Conditions = conditions(metav1.ConditionTrue, reason, msg, false)
	case s.Proof == verdict.Verified:
		out.Conditions = conditions(metav1.ConditionFalse, "NotReady", "every current Pod runs the digests Git pins; not every container is Ready yet", false)
	default:
		out.Conditions = conditions(metav1.ConditionFalse, reason, msg, false)
	}
	return out
}

// stuckReasons are the waiting reasons of a container that will not
// start without a change: the app is Degraded.
var stuckReasons = []string{"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "InvalidImageName"}

// conditions are Ready's and, when it is not True, Stalled's or
// Reconciling's: kstatus reads a resource with neither as Current.
func conditions(ready metav1.ConditionStatus, reason, msg string, stalled bool) []metav1.Condition {
	if reason == "" {
		reason = "Unknown"
	}
	out := []metav1.Condition{{Type: Ready, Status: ready, Reason: reason, Message: msg}}
	if ready == metav1.ConditionTrue {
		return out
	}
	other := Reconciling
	if stalled {
		other = Stalled
	}
	return append(out, metav1.Condition{Type: other, Status: metav1.ConditionTrue, Reason: reason, Message: msg})
}

// Source is what the Publisher reads an app's proof and place from:
// *reconciler.Reconciler.
type Source interface {
	Last(app string) (*status.App, *verdict.Verification, error)
	Config() *config.Config
	// RunsOn is the cluster app's last pass read its Pods on: its
	// name ("" for pinbot's own) and client; false before a pass
	// reached one, or when the app is read through Argo CD's API.
	RunsOn(app string) (name string, client dynamic.Interface, ok bool)
}

// Publisher writes the Proofs of the apps whose proof changed, each on
// the cluster its Pods run on: pinbot's own with its client, a spoke
// with the client the reconciler reads it with.
type Publisher struct {
	client dynamic.Interface
	src    Source
	now    func() time.Time

	mu      sync.Mutex
	pending []string
	wake    chan struct{}
	// off names the clusters with no Proof CRD ("" for pinbot's own):
	// nothing more is tried there.
	off map[string]bool
	// written is each app's status as last written, to tell an edit by
	// someone else.
	written map[string]string
	// mismatched is since when each app's proof is a Mismatch: Stalled
	// only once it lasts MismatchGrace.
	mismatched map[string]time.Time
}

// New returns a Publisher writing with client; Run starts it.
func New(client dynamic.Interface, src Source) *Publisher {
	return &Publisher{client: client, src: src, now: time.Now, wake: make(chan struct{}, 1), off: map[string]bool{}, written: map[string]string{}, mismatched: map[string]time.Time{}}
}

// Changed queues app's Proof to be written; it never blocks
// (reconciler.OnProofChange).
func (p *Publisher) Changed(app string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	if !slices.Contains(p.pending, app) {
		p.pending = append(p.pending, app)
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run writes the queued Proofs until ctx ends.
func (p *Publisher) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
		p.mu.Lock()
		apps := p.pending
		p.pending = nil
		p.mu.Unlock()
		for _, app := range apps {
			err := p.Write(ctx, app)
			var none *NoCRDError
			switch {
			case ctx.Err() != nil:
			case errors.As(err, &none):
				logctx.From(ctx).Info("writing no Proof objects there: the cluster has no Proof CustomResourceDefinition (deploy/components/proofs, or the chart's crds/)", "cluster", cmp.Or(none.Cluster, "(pinbot's own)"))
			case err != nil:
				logctx.From(ctx).Warn("writing the app's Proof failed", "app", app, "error", redact.String(err.Error()))
			}
		}
	}
}

// Write writes app's Proof as its last pass left it, on the cluster its
// Pods run on, when it says something else than the one there. An app
// that opts out (proofObject: false) has none, nor one whose cluster has
// no Proof CRD (asked once per cluster).
func (p *Publisher) Write(ctx context.Context, app string) error {
	apps := p.src.Config().Apps
	i := slices.IndexFunc(apps, func(a config.App) bool { return a.Name == app })
	if i < 0 || apps[i].ProofObject != nil && !*apps[i].ProofObject {
		return nil
	}
	cfg := &apps[i]
	where, client, ok := p.src.RunsOn(app)
	p.mu.Lock()
	off := p.off[where]
	p.mu.Unlock()
	switch {
	case !ok || off:
		return nil
	case where == "":
		client = p.client
	}
	s, v, err := p.src.Last(app)
	if err != nil {
		return err
	}
	ns := Namespace(cfg, v)
	if ns == "" {
		return nil // nowhere to put it before the first proof names one
	}
	want := p.graced(app, Of(app, s, v))
	res := client.Resource(GVR).Namespace(ns)
	obj, err := res.Get(ctx, app, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj = &unstructured.Unstructured{}
		obj.SetGroupVersionKind(GVK)
		obj.SetName(app)
		obj.SetNamespace(ns)
		obj.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "pinbot"})
		_ = unstructured.SetNestedField(obj.Object, app, "spec", "app")
		obj, err = res.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager})
		if apierrors.IsNotFound(err) {
			p.mu.Lock()
			p.off[where] = true
			p.mu.Unlock()
			return &NoCRDError{Cluster: where}
		}
	}
	if err != nil {
		return err
	}
	var have Status
	if raw, ok := obj.Object["status"]; ok {
		b, _ := json.Marshal(raw)
		_ = json.Unmarshal(b, &have)
	}
	now := metav1.NewTime(p.now())
	for i := range want.Conditions {
		c := &want.Conditions[i]
		c.ObservedGeneration = obj.GetGeneration()
		c.LastTransitionTime = now
		if old := meta.FindStatusCondition(have.Conditions, c.Type); old != nil && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
	}
	want.ObservedGeneration = obj.GetGeneration()
	if same(have, want) {
		return nil
	}
	p.mu.Lock()
	last, wrote := p.written[app]
	p.mu.Unlock()
	if wrote && last != key(have) {
		logctx.From(ctx).Warn("the app's Proof was edited by someone else; writing it again", "app", app, "namespace", ns)
	}
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&want)
	if err != nil {
		return err
	}
	patch := &unstructured.Unstructured{Object: map[string]any{"status": st}}
	patch.SetGroupVersionKind(GVK)
	patch.SetName(app)
	patch.SetNamespace(ns)
	if _, err := res.ApplyStatus(ctx, app, patch, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return err
	}
	p.mu.Lock()
	p.written[app] = key(want)
	p.mu.Unlock()
	return nil
}

// Namespace is where app's Proof lives: the app's namespace, else that
// of the Pods its proof found (an Argo CD or Flux app's).
func Namespace(app *config.App, v *verdict.Verification) string {
	if app.Namespace != "" {
		return app.Namespace
	}
	if v != nil {
		for _, c := range v.Containers {
			if c.Namespace != "" {
				return c.Namespace
			}
		}
	}
	return ""
}

func same(a, b Status) bool { return key(a) == key(b) }

func key(s Status) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// graced turns a Mismatch younger than MismatchGrace into Reconciling,
// and asks for app's Proof again when the grace ends.
func (p *Publisher) graced(app string, st Status) Status {
	if len(st.Conditions) < 2 || st.Conditions[1].Type != Stalled || st.Conditions[0].Reason != string(verdict.Mismatch) {
		p.mu.Lock()
		delete(p.mismatched, app)
		p.mu.Unlock()
		return st
	}
	now := p.now()
	p.mu.Lock()
	since, ok := p.mismatched[app]
	if !ok {
		since = now
		p.mismatched[app] = now
	}
	p.mu.Unlock()
	if left := since.Add(MismatchGrace).Sub(now); left > 0 {
		st.Conditions[1].Type = Reconciling
		st.Conditions[1].Message += fmt.Sprintf(" (Stalled if it lasts %s)", MismatchGrace)
		if !ok {
			time.AfterFunc(left, func() { p.Changed(app) })
		}
	}
	return st
}
