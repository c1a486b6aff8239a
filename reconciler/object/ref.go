// Package object names Kubernetes objects: the one reference type the
// Applier (reconciler/ssa), the verdict core (reconciler/verdict) and the
// reconciler share. It depends on nothing but apimachinery's unstructured
// objects.
package object

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
