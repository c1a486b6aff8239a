package cluster

import (
	"context"
	"errors"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"pinbot.dev/pinbot/reconciler/ssa"
)

// Transient reports whether a Kubernetes API error is worth retrying with
// backoff rather than reporting as a verdict on the manifests.
func Transient(err error) bool {
	var ae *ssa.ApplyError
	if errors.As(err, &ae) {
		err = ae.Err
	}
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err) ||
		errors.Is(err, context.DeadlineExceeded) || isConnError(err)
}

func isConnError(err error) bool {
	var ne net.Error
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) || errors.As(err, &ne)
}
