package reconciler

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// Reasons of the Events pinbot writes on the workloads it verifies.
const (
	EventVerified     = "Verified"
	EventMismatch     = "Mismatch"
	EventInconclusive = "Inconclusive"
)

// eventer writes Kubernetes Events through client-go's broadcaster, which
// aggregates repeats and rate-limits, so `kubectl describe` and Argo CD's
// events tab show what pinbot proved.
type eventer struct {
	bc  record.EventBroadcaster
	rec record.EventRecorder
}

func newEventer(kube kubernetes.Interface) *eventer {
	bc := record.NewBroadcaster()
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	return &eventer{bc: bc, rec: bc.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "pinbot"})}
}

func (e *eventer) close() { e.bc.Shutdown() }

// announce says, once a pass's proof changed state, what it is now: a
// log line at Info, and an Event on each workload of the pinbot's own
// cluster that it judged. Passes that only look (pinbot status) say
// nothing.
func (p *pass) announce(ctx context.Context, prev verdict.Verdict, v *verdict.Verification) {
	if v == nil || !p.mode.records() {
		return
	}
	state := verdict.StateOf(v)
	if state == prev {
		return
	}
	p.log.Info("verification", "commit", shortSHA(v.Commit), "state", string(state), "summary", v.Summary())
	if p.snap == nil || p.remote {
		return
	}
	reason, kind, msg := string(state), corev1.EventTypeNormal, ""
	switch state {
	case verdict.Verified:
		reason, msg = EventVerified, fmt.Sprintf("every current Pod runs the digests commit %s pins", shortSHA(v.Commit))
	case verdict.Mismatch:
		reason, kind, msg = EventMismatch, corev1.EventTypeWarning, mismatches(v)
	case verdict.Inconclusive:
		reason, kind, msg = EventInconclusive, corev1.EventTypeWarning, "the registry could not prove what some Pods run: "+v.Summary()
	default:
		return // Pending and Unknown are passing states, not news
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

// mismatches names the Pods that run another digest than Git pins.
func mismatches(v *verdict.Verification) string {
	var parts []string
	for _, c := range v.Containers {
		if c.Verdict == verdict.Mismatch && len(parts) < 5 {
			parts = append(parts, fmt.Sprintf("pod %s container %s runs %s, Git pins %s", c.Pod, c.Container, imageref.Short(c.RunningDigest), imageref.Short(c.GitDigest)))
		}
	}
	return "commit " + shortSHA(v.Commit) + ": " + strings.Join(parts, "; ")
}
