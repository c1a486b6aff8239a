// Package events writes the Kubernetes Events of pinbot's proofs, so that
// `kubectl describe` and Argo CD's events tab show what pinbot proved, and
// says what such an Event says of a verification.
package events

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"pinbot.dev/pinbot/internal/commitid"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// Recorder writes Events through client-go's broadcaster, which
// aggregates repeats and rate-limits.
type Recorder struct {
	bc  record.EventBroadcaster
	rec record.EventRecorder
}

// New returns a Recorder writing with kube as the component "pinbot".
func New(kube kubernetes.Interface) *Recorder {
	bc := record.NewBroadcaster()
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	return &Recorder{bc: bc, rec: bc.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "pinbot"})}
}

// Close stops the broadcaster.
func (r *Recorder) Close() { r.bc.Shutdown() }

// Write writes an Event on obj: a Warning when warning, else Normal.
func (r *Recorder) Write(obj runtime.Object, warning bool, reason, message string) {
	kind := corev1.EventTypeNormal
	if warning {
		kind = corev1.EventTypeWarning
	}
	r.rec.Event(obj, kind, reason, message)
}

// Of is what an Event says of v: its reason (Verified, Mismatch,
// Inconclusive, Unknown or Pending), whether it warns, and its message.
func Of(v *verdict.Verification) (reason string, warning bool, message string) {
	commit := "commit " + commitid.Short(v.Commit) + ": "
	switch state := verdict.StateOf(v); state {
	case verdict.Verified:
		return string(state), false, fmt.Sprintf("every current Pod runs the digests commit %s pins", commitid.Short(v.Commit))
	case verdict.Mismatch:
		return string(state), true, commit + v.Mismatches()
	case verdict.Inconclusive:
		return string(state), true, "the registry could not prove what some Pods run: " + v.Summary()
	case verdict.Unknown:
		return string(state), true, commit + v.Summary()
	}
	return string(verdict.Pending), false, commit + v.Summary()
}
