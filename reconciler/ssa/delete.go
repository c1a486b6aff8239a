package ssa

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/object"
)

// PruneError stops a prune: it names the object whose deletion failed and
// carries the API server's error.
type PruneError struct {
	Object object.Ref
	Err    error
}

// Error names the object and the cause.
func (e *PruneError) Error() string { return fmt.Sprintf("pruning %s: %s", e.Object, e.Err) }

// Unwrap returns the cause.
func (e *PruneError) Unwrap() error { return e.Err }

// DeleteForeground deletes u with foreground propagation, on condition
// that it is still the object listed (same UID and resourceVersion): one
// replaced or changed since, say newly annotated pinbot.dev/prune:
// "false", is left for the next sync to decide. An object already gone
// is not an error. It reports whether it deleted u; a failure is a
// *PruneError.
func (a *Applier) DeleteForeground(ctx context.Context, u *unstructured.Unstructured) (bool, error) {
	ref := object.RefOf(u)
	ri, err := a.resource(u)
	if err != nil {
		return false, &PruneError{Object: ref, Err: err}
	}
	uid, rv := u.GetUID(), u.GetResourceVersion()
	policy := metav1.DeletePropagationForeground
	opts := metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}
	err = ri.Delete(ctx, u.GetName(), opts)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return false, nil // gone, or changed since listed: the next sync decides
	}
	return false, &PruneError{Object: ref, Err: err}
}
