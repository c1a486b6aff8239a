package serve

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Lease is how replicas elect their leader through the Lease "pinbot" in
// the state namespace, as client-go's leader election does.
type Lease struct {
	// ID is this replica's holderIdentity. Default the hostname.
	ID string
	// Duration is how long followers wait before taking a Lease that was
	// not renewed; RenewDeadline how long the leader tries to renew before
	// giving up leadership; RetryPeriod how often replicas try to acquire
	// or renew it.
	Duration, RenewDeadline, RetryPeriod time.Duration
}

// Validate checks the timings as client-go's elector does, naming the
// flag of `pinbot serve` that sets each.
func (o *Lease) Validate() error {
	switch {
	case o.RetryPeriod <= 0:
		return fmt.Errorf("flag --retry-period: want a positive duration, got %s", o.RetryPeriod)
	case o.RenewDeadline <= o.RetryPeriod:
		return fmt.Errorf("flag --renew-deadline: want more than --retry-period (%s), got %s", o.RetryPeriod, o.RenewDeadline)
	case o.Duration <= o.RenewDeadline:
		return fmt.Errorf("flag --lease-duration: want more than --renew-deadline (%s), got %s", o.RenewDeadline, o.Duration)
	}
	return nil
}

// elector returns the leader elector for the Lease pinbot in ns.
func (o *Lease) elector(kube kubernetes.Interface, ns string, cb leaderelection.LeaderCallbacks) (*leaderelection.LeaderElector, error) {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: leaseName, Namespace: ns},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.ID},
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.Duration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            leaseName,
		Callbacks:       cb,
	})
	if err != nil {
		return nil, fmt.Errorf("setting up leader election on %s/%s: %w", ns, leaseName, err)
	}
	return le, nil
}
