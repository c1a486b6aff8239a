package verdict

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"pinbot.dev/pinbot/reconciler/object"
)

// Health is an app's aggregate health: are its workloads working? It is a
// separate answer from sync status (does the cluster match Git?).
type Health string

// Health values, from best to worst.
const (
	Healthy     Health = "Healthy"
	Progressing Health = "Progressing"
	Missing     Health = "Missing"
	Degraded    Health = "Degraded"
	// HealthUnknown: health could not be computed (source or cluster
	// unreachable).
	HealthUnknown Health = "Unknown"
)

// ObjectHealth is one object's kstatus status.
type ObjectHealth struct {
	Object  object.Ref `json:"object"`
	Status  string     `json:"status"` // kstatus: Current, InProgress, Failed, NotFound, Terminating, Unknown
	Message string     `json:"message,omitempty"`
}

// HealthReport is the health of every desired object and the aggregate.
type HealthReport struct {
	Health  Health         `json:"health"`
	Reason  string         `json:"reason,omitempty"`
	Objects []ObjectHealth `json:"objects,omitempty"`
}

// degradingWaits are container waiting reasons that make a workload
// Degraded at once, before its progress deadline expires.
var degradingWaits = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"CrashLoopBackOff": true, "CreateContainerConfigError": true, "CreateContainerError": true,
}

// AssessHealth computes each desired object's status with kstatus and
// aggregates: Degraded if any object Failed, else Missing if any is absent,
// else Progressing if any is in progress, else Healthy. A workload whose
// current-revision Pods cannot pull their image (or crash-loop) is Failed
// with the Pod's waiting reason and message, as Kubernetes itself reports
// it only once the progress deadline passes. Pure.
func AssessHealth(s *Snapshot) HealthReport {
	ix := newIndex(s)
	rep := HealthReport{Health: Healthy}
	worst := -1
	for _, d := range s.Desired {
		ref := object.RefOf(d)
		oh := ObjectHealth{Object: ref}
		live := s.Live[ref]
		switch {
		case live == nil:
			oh.Status, oh.Message = string(status.NotFoundStatus), "not in the cluster"
		default:
			res, err := status.Compute(live)
			if err != nil {
				oh.Status, oh.Message = string(status.UnknownStatus), err.Error()
			} else {
				oh.Status, oh.Message = string(res.Status), res.Message
			}
			if IsWorkload(d) {
				if msg := podFailure(ix.rolloutOf(d, live).current); msg != "" {
					oh.Status, oh.Message = string(status.FailedStatus), msg
				}
			}
		}
		rep.Objects = append(rep.Objects, oh)
		if rank := healthRank(oh.Status); rank > worst {
			worst = rank
			rep.Health = healthOf(oh.Status)
			rep.Reason = ""
			if rep.Health != Healthy {
				rep.Reason = fmt.Sprintf("%s: %s", ref, oh.Message)
			}
		}
	}
	return rep
}

// podFailure returns the first degrading container wait among pods, as
// "pod P container C: Reason: message".
func podFailure(pods []*corev1.Pod) string {
	for _, p := range pods {
		for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
			for _, cs := range list {
				if w := cs.State.Waiting; w != nil && degradingWaits[w.Reason] {
					msg := fmt.Sprintf("pod %s container %s: %s", p.Name, cs.Name, w.Reason)
					if w.Message != "" {
						msg += ": " + w.Message
					}
					return msg
				}
			}
		}
	}
	return ""
}

func healthRank(s string) int {
	switch status.Status(s) {
	case status.CurrentStatus:
		return 0
	case status.NotFoundStatus:
		return 2
	case status.FailedStatus:
		return 3
	}
	return 1 // InProgress, Terminating, Unknown
}

func healthOf(s string) Health {
	switch healthRank(s) {
	case 0:
		return Healthy
	case 2:
		return Missing
	case 3:
		return Degraded
	}
	return Progressing
}
