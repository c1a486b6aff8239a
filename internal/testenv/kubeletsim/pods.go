package kubeletsim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"pinbot.dev/pinbot/internal/logctx"
)

// podRecord is what the node remembers about one Pod it runs.
type podRecord struct {
	uid        types.UID
	created    time.Time // first seen on this node
	ip         string
	containers map[string]*containerRecord // by container name
}

// containerRecord is one container's pull: its image once pulled, or the
// failures so far. Only the worker handling the Pod touches it.
type containerRecord struct {
	pulled     *image // what the node pulled for the container
	effective  *image // what it runs: pulled, or a stale image the node kept
	started    time.Time
	failures   int
	err        error     // of the last pull
	retryAt    time.Time // no pull before then
	backingOff bool      // the last look found the pull backing off
}

func (s *Sim) onPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	switch {
	case pod.Spec.NodeName == s.nodeName:
	case pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil && s.fits(pod):
	default:
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(pod)
	if err == nil {
		s.queue.Add(key)
	}
}

func (s *Sim) onPodDelete(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	s.recordsMu.Lock()
	delete(s.records, key)
	s.recordsMu.Unlock()
}

// resyncAll re-evaluates every Pod on the node after a hook changed.
func (s *Sim) resyncAll() {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	if s.cancel == nil {
		return // not running; hooks take effect from Start
	}
	for _, obj := range s.podsInformer.GetStore().List() {
		if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName == s.nodeName {
			if key, err := cache.MetaNamespaceKeyFunc(pod); err == nil {
				s.queue.Add(key)
			}
		}
	}
}

func (s *Sim) processNext(ctx context.Context) bool {
	key, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(key)
	again, err := s.handle(ctx, key)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			logctx.From(ctx).Warn("kubeletsim: handling pod", "node", s.nodeName, "pod", key, "err", err)
		}
		s.queue.AddRateLimited(key)
	case again > 0:
		s.queue.Forget(key)
		s.queue.AddAfter(key, again)
	default:
		s.queue.Forget(key)
	}
	return true
}

// handle binds, runs or finalises one Pod. It returns when to look again:
// 0 for no need, else after a delay.
func (s *Sim) handle(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	pod, err := s.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading pod %s from cache: %w", key, err)
	}
	switch {
	case pod.Spec.NodeName == "":
		return 0, s.bind(ctx, pod)
	case pod.Spec.NodeName != s.nodeName:
		return 0, nil
	case pod.DeletionTimestamp != nil:
		return s.finalise(ctx, pod)
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return 0, nil
	}
	return s.run(ctx, key, pod)
}

// bind is the scheduler's part: it assigns the Pod to this node through the
// Binding subresource. Losing the race to another node is fine.
func (s *Sim) bind(ctx context.Context, pod *corev1.Pod) error {
	if pod.DeletionTimestamp != nil || !s.fits(pod) {
		return nil
	}
	err := s.client.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: s.nodeName},
	}, metav1.CreateOptions{})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("binding pod %s/%s to node %s: %w", pod.Namespace, pod.Name, s.nodeName, err)
}

// finalise ends a Pod being deleted, after the deletion delay: its
// containers have stopped, so the deletion completes at once (grace 0).
func (s *Sim) finalise(ctx context.Context, pod *corev1.Pod) (time.Duration, error) {
	since := pod.DeletionTimestamp.Time
	if pod.DeletionGracePeriodSeconds != nil {
		since = since.Add(-time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
	}
	if wait := time.Until(since.Add(s.deleteDelay)); wait > 0 {
		return wait, nil
	}
	err := s.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64),
		Preconditions:      &metav1.Preconditions{UID: &pod.UID},
	})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return 0, nil
	}
	return 0, fmt.Errorf("finalising deletion of pod %s/%s: %w", pod.Namespace, pod.Name, err)
}

// record returns the node's record of pod, starting a new one for a new
// Pod (or a new Pod of the same name).
func (s *Sim) record(key string, pod *corev1.Pod) *podRecord {
	s.recordsMu.Lock()
	defer s.recordsMu.Unlock()
	r, ok := s.records[key]
	if ok && r.uid == pod.UID {
		return r
	}
	r = &podRecord{uid: pod.UID, created: time.Now(), ip: pod.Status.PodIP, containers: map[string]*containerRecord{}}
	if r.ip == "" {
		n := s.nextPodIP.Add(1)
		r.ip = fmt.Sprintf("%s.%d.%d", s.podIPPrefix, (n/254)%256, n%254+1)
	}
	s.records[key] = r
	return r
}

// pullAll pulls what the Pod needs next: init containers one at a time in
// order, then every app container. A failed pull is retried after a
// backoff that starts at 200ms and doubles up to the WithPullBackoff cap;
// pullAll returns how long until the next retry is due, or 0.
func (s *Sim) pullAll(ctx context.Context, pod *corev1.Pod, rec *podRecord) (retryIn time.Duration) {
	now := time.Now()
	retry := func(at time.Time) {
		if d := at.Sub(now); d > 0 && (retryIn == 0 || d < retryIn) {
			retryIn = d
		}
	}
	pullOne := func(c *corev1.Container) bool {
		cr := rec.containers[c.Name]
		if cr == nil {
			cr = &containerRecord{}
			rec.containers[c.Name] = cr
		}
		// A stale image is looked up each time, so that setting or clearing
		// the hook takes effect on running Pods too.
		stale, err := s.staleImageFor(ctx, c.Image)
		if err == nil && stale == nil && cr.pulled == nil {
			if now.Before(cr.retryAt) {
				cr.backingOff = true
				retry(cr.retryAt)
				return false
			}
			cr.pulled, err = s.imageFor(ctx, c)
		}
		if err != nil {
			cr.failures++
			cr.err, cr.backingOff = err, false
			cr.retryAt = now.Add(s.backoff(cr.failures))
			retry(cr.retryAt)
			return false
		}
		cr.effective, cr.err, cr.backingOff = cr.pulled, nil, false
		if stale != nil {
			cr.effective = stale
		}
		if cr.started.IsZero() {
			cr.started = time.Now()
		}
		return true
	}
	for i := range pod.Spec.InitContainers {
		if !pullOne(&pod.Spec.InitContainers[i]) {
			return retryIn
		}
	}
	for i := range pod.Spec.Containers {
		pullOne(&pod.Spec.Containers[i])
	}
	return retryIn
}

// backoff is the delay before retrying a pull that failed n times.
func (s *Sim) backoff(n int) time.Duration {
	d := 200 * time.Millisecond
	for i := 1; i < n && d < s.pullBackoff; i++ {
		d *= 2
	}
	return min(d, s.pullBackoff)
}

// containerID is a stable fake runtime ID for a container of a Pod.
func containerID(runtime string, uid types.UID, name string) string {
	sum := sha256.Sum256([]byte(string(uid) + "/" + name))
	scheme := "containerd"
	if len(runtime) >= 6 && runtime[:6] == "docker" {
		scheme = "docker"
	}
	return scheme + "://" + hex.EncodeToString(sum[:])
}
