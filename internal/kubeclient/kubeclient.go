// Package kubeclient builds pinbot's typed Kubernetes client. It speaks
// protobuf to the API server, as Kubernetes' own controllers do: what a
// serve replica lists and watches of the built-in kinds (every Pod of
// its apps' namespaces, their ReplicaSets, the Leases) is cheaper to
// encode and decode that way than as JSON, on both sides.
package kubeclient

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// New returns a typed client of rc that sends and asks for protobuf. It
// still reads JSON, which some answers (a proxy's, an error's) are.
func New(rc *rest.Config) (*kubernetes.Clientset, error) {
	c := rest.CopyConfig(rc)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return kubernetes.NewForConfig(c)
}
