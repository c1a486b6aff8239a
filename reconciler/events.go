package reconciler

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corerecord "k8s.io/client-go/tools/record"

	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/record"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// Reasons of the Events pinbot writes on the apps and workloads it
// verifies.
const (
	eventVerified     = "Verified"
	eventMismatch     = "Mismatch"
	eventInconclusive = "Inconclusive"
	eventPending      = "Pending"
	eventUnknown      = "Unknown"
)

// eventer writes Kubernetes Events through client-go's broadcaster, which
// aggregates repeats and rate-limits, so `kubectl describe` and Argo CD's
// events tab show what pinbot proved.
type eventer struct {
	bc  corerecord.EventBroadcaster
	rec corerecord.EventRecorder
}

func newEventer(kube kubernetes.Interface) *eventer {
	bc := corerecord.NewBroadcaster()
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	return &eventer{bc: bc, rec: bc.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "pinbot"})}
}

func (e *eventer) close() { e.bc.Shutdown() }

// announce says, once a pass's proof changed state, what it is now: a
// log line at Info; an Event on the app's object (the Argo CD
// Application, Flux Kustomization or HelmRelease a verify-only app
// proves, the ConfigMap of a pinbot app's record) for every state; and
// one on each workload of pinbot's own cluster that it judged, for
// Verified, Mismatch and Inconclusive. Passes that only look (pinbot
// status) say nothing.
func (p *pass) announce(ctx context.Context, prev verdict.Verdict, v *verdict.Verification) {
	if v == nil || !p.mode.records() {
		return
	}
	state := verdict.StateOf(v)
	if state == prev {
		return
	}
	p.log.Info("verification", "commit", shortSHA(v.Commit), "state", string(state), "summary", v.Summary())
	reason, kind, msg := string(state), corev1.EventTypeNormal, ""
	switch state {
	case verdict.Verified:
		reason, msg = eventVerified, fmt.Sprintf("every current Pod runs the digests commit %s pins", shortSHA(v.Commit))
	case verdict.Mismatch:
		reason, kind, msg = eventMismatch, corev1.EventTypeWarning, "commit "+shortSHA(v.Commit)+": "+v.Mismatches()
	case verdict.Inconclusive:
		reason, kind, msg = eventInconclusive, corev1.EventTypeWarning, "the registry could not prove what some Pods run: "+v.Summary()
	case verdict.Unknown:
		reason, kind, msg = eventUnknown, corev1.EventTypeWarning, "commit "+shortSHA(v.Commit)+": "+v.Summary()
	default:
		reason, msg = eventPending, "commit "+shortSHA(v.Commit)+": "+v.Summary()
	}
	if owner := p.owner(); owner != nil {
		p.r.events.rec.Event(owner, kind, reason, msg)
	}
	if f := p.r.onEvent.Load(); f != nil {
		(*f)(ProofEvent{App: p.app.Name, Warning: kind == corev1.EventTypeWarning, Reason: reason, Message: msg})
	}
	if p.snap == nil || p.remote || state == verdict.Pending || state == verdict.Unknown {
		return // Pending and Unknown are passing states: no news on each workload
	}
	for _, d := range p.snap.Desired {
		if !verdict.IsWorkload(d) {
			continue
		}
		if live, ok := p.snap.Live[object.RefOf(d)]; ok && live != nil {
			p.r.events.rec.Event(live, kind, reason, msg)
		}
	}
}

// ProofEvent is a change of an app's proof, as announce writes it in an
// Event: Reason is Verified, Pending, Mismatch, Inconclusive or Unknown.
type ProofEvent struct {
	App     string
	Warning bool
	Reason  string
	Message string
}

// OnProofEvent calls f with each change of an app's proof that a pass
// writing the app's status announces (serve's notifications). f must not
// block; nil stops the calls.
func (r *Reconciler) OnProofEvent(f func(ProofEvent)) {
	if f == nil {
		r.onEvent.Store(nil)
		return
	}
	r.onEvent.Store(&f)
}

// owner is the object the pass's app's Events go on (eventOwner).
func (p *pass) owner() *corev1.ObjectReference { return eventOwner(p.r.history, p.app, p.st) }

// eventOwner is the object app's Events go on: a verify-only app's
// deployer object as its last pass read it (nil before one), else the
// ConfigMap of its record in h.
func eventOwner(h *record.History, app *config.App, st *appState) *corev1.ObjectReference {
	if app.VerifyOnly() {
		return st.owner.Load()
	}
	return h.Ref(app.Name)
}

// Event writes an Event on app's object (see announce): what the release
// chain decided about it, a hold, a rollback, a soak. Nothing is written
// for an app unknown, or whose object no pass has read yet.
func (r *Reconciler) Event(app string, warning bool, reason, message string) {
	a, st, err := r.app(app)
	if err != nil {
		return
	}
	owner := eventOwner(r.history, a, st)
	if owner == nil {
		return
	}
	kind := corev1.EventTypeNormal
	if warning {
		kind = corev1.EventTypeWarning
	}
	r.events.rec.Event(owner, kind, reason, message)
}
