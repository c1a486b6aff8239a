package kubeletsim

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"pinbot.dev/pinbot/internal/logctx"
)

const leaseNamespace = "kube-node-lease"

// registerNode creates or updates the Node with a Ready status, drops the
// not-ready taint the TaintNodesByCondition admission plugin adds on create
// (the node lifecycle controller would, and it does not run), and takes the
// node's Lease.
func (s *Sim) registerNode(ctx context.Context) error {
	nodes := s.client.CoreV1().Nodes()
	want := s.nodeObject()
	if _, err := nodes.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering node %s: %w", s.nodeName, err)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, s.nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for k, v := range want.Labels {
			n.Labels[k] = v
		}
		var taints []corev1.Taint
		for _, t := range n.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady && t.Key != corev1.TaintNodeUnreachable {
				taints = append(taints, t)
			}
		}
		n.Spec.Taints = taints
		n.Spec.PodCIDR = want.Spec.PodCIDR
		n, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		n.Status = want.Status
		_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("setting status of node %s: %w", s.nodeName, err)
	}
	return s.renewLease(ctx)
}

func (s *Sim) nodeObject() *corev1.Node {
	labels := map[string]string{}
	for k, v := range s.labels {
		labels[k] = v
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("64"),
		corev1.ResourceMemory:           resource.MustParse("256Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
		corev1.ResourcePods:             resource.MustParse("5000"),
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	cond := func(t corev1.NodeConditionType, st corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: st, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: s.nodeName, Labels: labels},
		Spec:       corev1.NodeSpec{PodCIDR: s.podIPPrefix + ".0.0/16"},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status (simulated by pinbot kubeletsim)"),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: s.nodeIP},
				{Type: corev1.NodeHostName, Address: s.nodeName},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID:               fmt.Sprintf("kubeletsim-%d", s.nodeIndex),
				SystemUUID:              fmt.Sprintf("kubeletsim-%d", s.nodeIndex),
				BootID:                  fmt.Sprintf("kubeletsim-%d", s.nodeIndex),
				KernelVersion:           "6.8.0-kubeletsim",
				OSImage:                 "pinbot kubelet simulator",
				ContainerRuntimeVersion: s.runtimeName,
				KubeletVersion:          "v1.37.2",
				OperatingSystem:         s.platform.OS,
				Architecture:            s.platform.Architecture,
			},
		},
	}
}

// renewLease creates or renews the node's Lease in kube-node-lease.
func (s *Sim) renewLease(ctx context.Context) error {
	leases := s.client.CoordinationV1().Leases(leaseNamespace)
	now := metav1.NewMicroTime(time.Now())
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(ctx, s.nodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: s.nodeName, Namespace: leaseNamespace},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity:       ptr.To(s.nodeName),
					LeaseDurationSeconds: ptr.To(int32(40)),
					RenewTime:            &now,
				},
			}, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		l.Spec.HolderIdentity = ptr.To(s.nodeName)
		l.Spec.RenewTime = &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("renewing lease of node %s: %w", s.nodeName, err)
	}
	return nil
}

// heartbeatLoop renews the Lease and refreshes the Ready condition's
// heartbeat until ctx is done.
func (s *Sim) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(s.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.renewLease(ctx); err != nil && ctx.Err() == nil {
			logctx.From(ctx).Warn("kubeletsim: heartbeat", "node", s.nodeName, "err", err)
		}
		if err := s.refreshNodeReady(ctx); err != nil && ctx.Err() == nil {
			logctx.From(ctx).Warn("kubeletsim: heartbeat", "node", s.nodeName, "err", err)
		}
	}
}

func (s *Sim) refreshNodeReady(ctx context.Context) error {
	nodes := s.client.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(ctx, s.nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		for i := range n.Status.Conditions {
			c := &n.Status.Conditions[i]
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				c.Status, c.Reason, c.LastTransitionTime = corev1.ConditionTrue, "KubeletReady", now
			}
			c.LastHeartbeatTime = now
		}
		_, err = nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("refreshing status of node %s: %w", s.nodeName, err)
	}
	return nil
}
