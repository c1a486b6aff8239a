package ssa

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"

	"pinbot.dev/pinbot/reconciler/object"
)

// inventoryWorkers bounds the concurrent LISTs of an inventory.
const inventoryWorkers = 8

// Inventory lists what pinbot applied for app anywhere in the cluster:
// every object of every listable kind that carries the inventory label
// LabelApp=app, was applied by pinbot (it bears pinbot's server-side
// apply managed-fields entry or its config-hash annotation) and has no
// controller owner (controllers copy labels and annotations onto what
// they create, as Deployments do onto ReplicaSets). Kinds pinbot may not
// list are skipped, as are Events and core Endpoints. Objects come back with their apiVersion
// and kind set, in no particular order.
//
// It costs one discovery and one LIST of metadata per kind; the reconcile loop runs it
// once per app and then follows the inventory's kinds with watches.
func (a *Applier) Inventory(ctx context.Context, app string) ([]*unstructured.Unstructured, error) {
	return a.InventoryIn(ctx, app, nil)
}

// kindScope is a listable kind and whether it is namespaced.
type kindScope struct {
	gvk        schema.GroupVersionKind
	gvr        schema.GroupVersionResource
	namespaced bool
}

// listableKinds discovers the kinds the API server serves that can be
// listed and watched, at their preferred versions. A group whose discovery
// fails is skipped.
func (a *Applier) listableKinds() ([]kindScope, error) {
	lists, err := discovery.ServerPreferredResources(a.disc)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discovering the served kinds: %w", err)
	}
	lists = discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "watch"}}, lists)
	var out []kindScope
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range l.APIResources {
			if strings.Contains(res.Name, "/") || res.Name == "events" || gv.Group == "" && res.Name == "endpoints" {
				// Events are noise; core Endpoints are deprecated (every
				// LIST warns) and come from Services. Objects of these
				// kinds that Git declares are still watched.
				continue
			}
			out = append(out, kindScope{gvk: gv.WithKind(res.Kind), gvr: gv.WithResource(res.Name), namespaced: res.Namespaced})
		}
	}
	return out, nil
}

// InventoryIn is Inventory limited to namespaces for namespaced kinds (all
// namespaces when nil); cluster-scoped kinds are listed cluster-wide.
func (a *Applier) InventoryIn(ctx context.Context, app string, namespaces []string) ([]*unstructured.Unstructured, error) {
	objs, err := a.listLabelled(ctx, object.LabelApp+"="+app, true, namespaces)
	if err != nil {
		return nil, fmt.Errorf("the inventory of %s: %w", app, err)
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if object.InInventory(o, app) {
			out = append(out, o)
		}
	}
	return out, nil
}

// listLabelled lists the objects selector selects, of every listable
// kind: the cluster-scoped kinds (when cluster is set), and the
// namespaced kinds in namespaces (all namespaces when nil; none when
// empty). Kinds pinbot may not list are skipped. Each object comes back
// once, with its apiVersion and kind set.
//
// The LISTs ask for metadata only: an inventory is judged by labels,
// annotations, managed fields and owners, and a Secret's data or a
// Deployment's spec would only cost the API server, the wire and the
// heap (a replica taking over thousands of apps lists every kind of
// their namespaces).
func (a *Applier) listLabelled(ctx context.Context, selector string, cluster bool, namespaces []string) ([]*unstructured.Unstructured, error) {
	kinds, err := a.listableKinds()
	if err != nil {
		return nil, err
	}
	type job struct {
		k  kindScope
		ri metadata.ResourceInterface
	}
	var jobs []job
	for _, k := range kinds {
		switch {
		case !k.namespaced:
			if cluster {
				jobs = append(jobs, job{k: k, ri: a.md.Resource(k.gvr)})
			}
		case namespaces == nil:
			jobs = append(jobs, job{k: k, ri: a.md.Resource(k.gvr)})
		default:
			for _, ns := range namespaces {
				jobs = append(jobs, job{k: k, ri: a.md.Resource(k.gvr).Namespace(ns)})
			}
		}
	}
	var (
		mu   sync.Mutex
		out  []*unstructured.Unstructured
		seen = map[string]bool{} // by UID: a kind served by two groups
	)
	var g errgroup.Group
	g.SetLimit(inventoryWorkers)
	for _, j := range jobs {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			list, err := j.ri.List(ctx, metav1.ListOptions{LabelSelector: selector})
			switch {
			case apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err):
				return nil // a kind pinbot may not or cannot list
			case err != nil:
				return fmt.Errorf("listing %s: %w", j.k.gvr.GroupResource(), err)
			}
			mu.Lock()
			defer mu.Unlock()
			for i := range list.Items {
				item := &list.Items[i]
				if seen[string(item.GetUID())] {
					continue
				}
				seen[string(item.GetUID())] = true
				u, err := fromMetadata(item, j.k.gvk)
				if err != nil {
					return fmt.Errorf("listing %s: %w", j.k.gvr.GroupResource(), err)
				}
				out = append(out, u)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("listing: %w", err)
	}
	return out, nil
}

// fromMetadata is m as an object of kind gvk with only its metadata.
func fromMetadata(m *metav1.PartialObjectMetadata, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	meta, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&m.ObjectMeta)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": meta}}
	u.SetGroupVersionKind(gvk)
	return u, nil
}
