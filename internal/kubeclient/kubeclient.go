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
	"k8s.io/client-go/tools/clientcmd"
)

// New returns a typed client of rc that sends and asks for protobuf. It
// still reads JSON, which some answers (a proxy's, an error's) are.
func New(rc *rest.Config) (*kubernetes.Clientset, error) {
	c := rest.CopyConfig(rc)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return kubernetes.NewForConfig(c)
}

// FromKubeconfig is New of the kubeconfig at path (default $KUBECONFIG,
// else ~/.kube/config, else the in-cluster service account) and its
// context (default its current one); nil and no error when there is
// none of them.
func FromKubeconfig(path, context string) (*kubernetes.Clientset, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = path
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err) && path == "" && context == "":
		return nil, nil
	case err != nil:
		return nil, err
	}
	return New(rc)
}
