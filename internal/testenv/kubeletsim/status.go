package kubeletsim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// crashLoopInterval is how often a failing OnFailure container "restarts".
const crashLoopInterval = time.Second

// run pulls what the Pod needs and writes the status a kubelet would. It
// returns when to look at the Pod again, or 0.
func (s *Sim) run(ctx context.Context, key string, pod *corev1.Pod) (time.Duration, error) {
	rec := s.record(key, pod)
	retryIn := s.pullAll(ctx, pod, rec)
	var again time.Duration
	first := true
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur := pod
		if !first {
			var err error
			cur, err = s.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if cur.UID != pod.UID || cur.DeletionTimestamp != nil {
				return nil
			}
		}
		first = false
		st, next := s.podStatus(cur, rec, time.Now())
		again = next
		if apiequality.Semantic.DeepEqual(cur.Status, st) {
			return nil
		}
		up := cur.DeepCopy()
		up.Status = st
		_, err := s.client.CoreV1().Pods(up.Namespace).UpdateStatus(ctx, up, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("updating status of pod %s: %w", key, err)
	}
	if retryIn > 0 && (again == 0 || retryIn < again) {
		again = retryIn
	}
	return again, nil
}

// podStatus computes the status of a Pod the node runs, from the Pod, the
// node's record of its pulls, the hooks and the time. The second result is
// when the status will change by itself (a Job container finishing), or 0.
func (s *Sim) podStatus(pod *corev1.Pod, rec *podRecord, now time.Time) (corev1.PodStatus, time.Duration) {
	st := *pod.Status.DeepCopy()
	st.HostIP = s.nodeIP
	st.HostIPs = []corev1.HostIP{{IP: s.nodeIP}}
	if !pod.Spec.HostNetwork {
		st.PodIP = rec.ip
		st.PodIPs = []corev1.PodIP{{IP: rec.ip}}
	} else {
		st.PodIP = s.nodeIP
		st.PodIPs = []corev1.PodIP{{IP: s.nodeIP}}
	}
	if st.StartTime == nil {
		st.StartTime = ptrTime(rec.created)
	}
	form := ImageIDForm(s.imageIDForm.Load())
	jobLike := pod.Spec.RestartPolicy != corev1.RestartPolicyAlways
	failJob := jobLike && hookMatches(&s.failJob, pod)
	failReady := hookMatches(&s.failReady, pod)
	crashLoop := !jobLike && hookMatches(&s.crashLoop, pod)
	var next time.Duration
	wake := func(d time.Duration) {
		if d > 0 && (next == 0 || d < next) {
			next = d
		}
	}

	// Init containers run one at a time, in order.
	initDone := true
	var incomplete []string
	st.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		cr := rec.containers[c.Name]
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: new(bool)}
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		switch {
		case !initDone || cr == nil || (cr.effective == nil && cr.err == nil):
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "PodInitializing"}
			initDone = false
		case cr.effective == nil:
			cs.State.Waiting = pullWaiting(c.Image, cr)
			initDone = false
		case sidecar:
			s.running(&cs, pod, cr, form, true)
		default:
			s.fillImage(&cs, pod, cr, form)
			cs.State.Terminated = &corev1.ContainerStateTerminated{
				Reason: "Completed", StartedAt: mtime(cr.started), FinishedAt: mtime(cr.started), ContainerID: cs.ContainerID,
			}
		}
		if !initDone {
			incomplete = append(incomplete, c.Name)
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}

	var waiting, running, succeeded, failed int
	var unready []string
	st.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		cr := rec.containers[c.Name]
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: new(bool)}
		switch {
		case !initDone:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "PodInitializing"}
			waiting++
		case cr == nil || (cr.effective == nil && cr.err == nil):
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
			waiting++
		case cr.effective == nil:
			cs.State.Waiting = pullWaiting(c.Image, cr)
			waiting++
		case crashLoop:
			s.fillImage(&cs, pod, cr, form)
			cs.RestartCount = 1 + int32(now.Sub(cr.started)/crashLoopInterval)
			cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
				Reason: "Error", ExitCode: 1, StartedAt: mtime(cr.started), FinishedAt: mtime(cr.started), ContainerID: cs.ContainerID,
			}
			cs.State.Waiting = &corev1.ContainerStateWaiting{
				Reason:  "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off restarting failed container %s in pod %s_%s(%s)", c.Name, pod.Name, pod.Namespace, pod.UID),
			}
			wake(crashLoopInterval)
			running++
		case !jobLike:
			s.running(&cs, pod, cr, form, !failReady)
			running++
		default:
			end := cr.started.Add(s.runDuration)
			switch {
			case now.Before(end):
				s.running(&cs, pod, cr, form, true)
				wake(end.Sub(now))
				running++
			case failJob && pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure:
				s.fillImage(&cs, pod, cr, form)
				cs.RestartCount = 1 + int32(now.Sub(end)/crashLoopInterval)
				cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
					Reason: "Error", ExitCode: 1, StartedAt: mtime(end), FinishedAt: mtime(end), ContainerID: cs.ContainerID,
				}
				cs.State.Waiting = &corev1.ContainerStateWaiting{
					Reason:  "CrashLoopBackOff",
					Message: fmt.Sprintf("back-off restarting failed container %s in pod %s_%s(%s)", c.Name, pod.Name, pod.Namespace, pod.UID),
				}
				wake(crashLoopInterval)
				running++ // the kubelet keeps restarting it: the Pod is not done
			case failJob:
				s.fillImage(&cs, pod, cr, form)
				cs.State.Terminated = &corev1.ContainerStateTerminated{
					Reason: "Error", ExitCode: 1, StartedAt: mtime(cr.started), FinishedAt: mtime(end), ContainerID: cs.ContainerID,
				}
				failed++
			default:
				s.fillImage(&cs, pod, cr, form)
				cs.State.Terminated = &corev1.ContainerStateTerminated{
					Reason: "Completed", StartedAt: mtime(cr.started), FinishedAt: mtime(end), ContainerID: cs.ContainerID,
				}
				succeeded++
			}
		}
		if !cs.Ready {
			unready = append(unready, c.Name)
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	// The kubelet lists app containers by name.
	slices.SortFunc(st.ContainerStatuses, func(a, b corev1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) })

	n := len(pod.Spec.Containers)
	switch {
	case !initDone:
		st.Phase = corev1.PodPending
	case jobLike && succeeded+failed == n && failed > 0:
		st.Phase = corev1.PodFailed
	case jobLike && succeeded == n:
		st.Phase = corev1.PodSucceeded
	case waiting == n:
		st.Phase = corev1.PodPending
	default:
		st.Phase = corev1.PodRunning
	}

	set := func(t corev1.PodConditionType, ok bool, reason, msg string) {
		setCondition(&st, t, ok, reason, msg, now)
	}
	set(corev1.PodReadyToStartContainers, true, "", "")
	if initDone {
		set(corev1.PodInitialized, true, "", "")
	} else {
		set(corev1.PodInitialized, false, "ContainersNotInitialized", fmt.Sprintf("containers with incomplete status: %v", incomplete))
	}
	terminal := st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed
	switch {
	case terminal:
		set(corev1.ContainersReady, false, "PodCompleted", "")
		set(corev1.PodReady, false, "PodCompleted", "")
	case len(unready) > 0:
		msg := fmt.Sprintf("containers with unready status: %v", unready)
		set(corev1.ContainersReady, false, "ContainersNotReady", msg)
		set(corev1.PodReady, false, "ContainersNotReady", msg)
	default:
		set(corev1.ContainersReady, true, "", "")
		if gates := unmetGates(pod, &st); len(gates) > 0 {
			set(corev1.PodReady, false, "ReadinessGatesNotReady", fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", gates[0]))
		} else {
			set(corev1.PodReady, true, "", "")
		}
	}
	set(corev1.PodScheduled, true, "", "")
	return st, next
}

// running fills a running container's status.
func (s *Sim) running(cs *corev1.ContainerStatus, pod *corev1.Pod, cr *containerRecord, form ImageIDForm, ready bool) {
	s.fillImage(cs, pod, cr, form)
	cs.State.Running = &corev1.ContainerStateRunning{StartedAt: mtime(cr.started)}
	cs.Ready = ready
	*cs.Started = true
}

func (s *Sim) fillImage(cs *corev1.ContainerStatus, pod *corev1.Pod, cr *containerRecord, form ImageIDForm) {
	cs.ImageID = cr.effective.imageID(form)
	if rw := s.rewriteID.Load(); rw != nil {
		cs.ImageID = (*rw)(cs.ImageID)
	}
	cs.ContainerID = containerID(s.runtimeName, pod.UID, cs.Name)
}

// pullWaiting is the waiting state of a container whose image did not
// pull: ErrImagePull right after a failed pull, ImagePullBackOff while the
// retry waits, as the kubelet reports them.
func pullWaiting(img string, cr *containerRecord) *corev1.ContainerStateWaiting {
	if errors.Is(cr.err, errNeverPull) {
		return &corev1.ContainerStateWaiting{
			Reason:  "ErrImageNeverPull",
			Message: fmt.Sprintf("Container image %q is not present with pull policy of Never", img),
		}
	}
	msg := fmt.Sprintf("failed to pull image %q: %s", img, cr.err.Error())
	if !cr.backingOff {
		return &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: msg}
	}
	return &corev1.ContainerStateWaiting{
		Reason:  "ImagePullBackOff",
		Message: fmt.Sprintf("Back-off pulling image %q: ErrImagePull: %s", img, msg),
	}
}

// unmetGates lists the Pod's readiness gates whose condition is not True.
func unmetGates(pod *corev1.Pod, st *corev1.PodStatus) []string {
	var unmet []string
	for _, g := range pod.Spec.ReadinessGates {
		ok := false
		for _, c := range st.Conditions {
			if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
				ok = true
			}
		}
		if !ok {
			unmet = append(unmet, string(g.ConditionType))
		}
	}
	return unmet
}

// setCondition sets a Pod condition, keeping its transition time while its
// status does not change.
func setCondition(st *corev1.PodStatus, t corev1.PodConditionType, ok bool, reason, msg string, now time.Time) {
	status := corev1.ConditionFalse
	if ok {
		status = corev1.ConditionTrue
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = mtime(now)
		}
		c.Status, c.Reason, c.Message = status, reason, msg
		return
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{
		Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: mtime(now),
	})
}

// mtime is t as the API stores it: whole seconds, so that a status read
// back compares equal to the one computed.
func mtime(t time.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second)) }

func ptrTime(t time.Time) *metav1.Time {
	m := mtime(t)
	return &m
}
