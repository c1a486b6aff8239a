// Package deployed reads what Argo CD or Flux deployed for a verify-only
// app: its deployer's object (an Application, a Kustomization and its
// GitRepository, or a HelmRelease and its chart's source), read only,
// and what that object says: the source it follows, the revision it
// deployed, its health and the workloads it applied. The reconciler's
// observer renders and verifies what this package reads; nothing here
// writes to a cluster.
package deployed

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/reconciler/chartrepo"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/object"
)

// App is what one read of the deployer's object says.
type App struct {
	Source deployer.Source
	// Branch is the branch Source.Ref names, resolved (TrackedBranch).
	Branch string
	// Revision is what the deployer deployed; zero when nothing yet.
	Revision  deployer.Revision
	Health    deployer.Health
	Workloads []object.Ref
	// NoInventory: the deployer keeps no record of what it applied (a
	// HelmRelease), so the render's workloads are the ones to prove.
	NoInventory bool
	// Owner is the deployer's object (the Application, Kustomization or
	// HelmRelease), which the app's Events go on.
	Owner *corev1.ObjectReference
}

// Path is the source path, "." for the repository's root.
func (d *App) Path() string {
	if d.Source.Path == "" {
		return "."
	}
	return d.Source.Path
}

// Root is where the render starts: the source path, or the chart of a
// Helm repository as chartrepo lays it out.
func (d *App) Root() string {
	if d.Source.Chart != nil {
		return chartrepo.Dir
	}
	return d.Path()
}

// Namespace is where the deployer puts namespaced objects that name none.
func (d *App) Namespace() string {
	if d.Source.Namespace == "" {
		return "default"
	}
	return d.Source.Namespace
}

// Tracked is app as pinbot's Git source and forge reporter see it: the
// repository, branch and path the deployer follows.
func (d *App) Tracked(app *config.App) *config.App {
	return &config.App{
		Name: app.Name, Repo: d.Source.RepoURL, Branch: d.Branch, Path: d.Path(), Namespace: d.Namespace(),
		Auth: app.Auth, VerifyTimeout: app.VerifyTimeout,
	}
}

// Select keeps the rendered workloads the deployer applied.
func (d *App) Select(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	if d.NoInventory {
		return objs
	}
	want := map[object.Ref]bool{}
	for _, w := range d.Workloads {
		want[w] = true
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if want[object.RefOf(o)] {
			out = append(out, o)
		}
	}
	return out
}

// Reader reads deployer objects: through a watch, or from the API server
// when a read must be fresh.
type Reader struct {
	Objects Getter
	// Kube reads the Secrets a chart repository's credentials are in.
	Kube kubernetes.Interface
}

// Getter reads one object: through a watch, or, fresh, from the API
// server (cluster.Objects).
type Getter interface {
	Get(ctx context.Context, gvr schema.GroupVersionResource, ns, name string, fresh bool) (*unstructured.Unstructured, error)
}

// OwnerRef is the reference of u, for an Event's involvedObject.
func OwnerRef(u *unstructured.Unstructured) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(),
		Name: u.GetName(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion()}
}
