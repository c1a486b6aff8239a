package reconciler

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/events"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/record"
	"pinbot.dev/pinbot/reconciler/verdict"
)

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
	reason, warning, msg := events.Of(v)
	if owner := p.owner(); owner != nil {
		p.r.events.Write(owner, warning, reason, msg)
	}
	if f := p.r.onEvent.Load(); f != nil {
		(*f)(ProofEvent{App: p.app.Name, Warning: warning, Reason: reason, Message: msg})
	}
	if p.snap == nil || p.remote || state == verdict.Pending || state == verdict.Unknown {
		return // Pending and Unknown are passing states: no news on each workload
	}
	for _, d := range p.snap.Desired {
		if !verdict.IsWorkload(d) {
			continue
		}
		if live, ok := p.snap.Live[object.RefOf(d)]; ok && live != nil {
			p.r.events.Write(live, warning, reason, msg)
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
	r.events.Write(owner, warning, reason, message)
}
