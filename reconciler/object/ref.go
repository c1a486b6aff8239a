// Package object names Kubernetes objects and reads the marks pinbot
// leaves on those it applies: the one reference type (Ref) every
// reconciler package shares, the inventory label and config hash (Stamp,
// ConfigHash, AsApplied, InInventory), and the kinds a sync treats apart
// (Namespaces, CRDs, Jobs). It depends on nothing but apimachinery.
package object

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Ref names one Kubernetes object.
type Ref struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// RefOf returns the reference of u.
func RefOf(u *unstructured.Unstructured) Ref {
	gvk := u.GroupVersionKind()
	return Ref{Group: gvk.Group, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}
}

// String reads "Deployment web/api", "Widget.example.com web/w1" or
// "ClusterRole view".
func (r Ref) String() string {
	kind := r.Kind
	if r.Group != "" && r.Group != "apps" && r.Group != "batch" {
		kind += "." + r.Group
	}
	if r.Namespace == "" {
		return kind + " " + r.Name
	}
	return kind + " " + r.Namespace + "/" + r.Name
}

// Less orders references by group, kind, namespace and name.
func Less(a, b Ref) bool {
	switch {
	case a.Group != b.Group:
		return a.Group < b.Group
	case a.Kind != b.Kind:
		return a.Kind < b.Kind
	case a.Namespace != b.Namespace:
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// Sort orders refs by group, kind, namespace and name.
func Sort(refs []Ref) { sort.Slice(refs, func(i, j int) bool { return Less(refs[i], refs[j]) }) }
