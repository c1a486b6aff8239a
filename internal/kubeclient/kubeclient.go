// Package kubeclient builds pinbot's typed Kubernetes client. It speaks
// protobuf to the API server, as Kubernetes' own controllers do: what a
// serve replica lists and watches of the built-in kinds (every Pod of
// its apps' namespaces, their ReplicaSets, the Leases) is cheaper to
// encode and decode that way than as JSON, on both sides.
package kubeclient

import (
	"log/slog"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"pinbot.dev/pinbot/internal/logctx"
)

// New returns a typed client of rc that sends and asks for protobuf. It
// still reads JSON, which some answers (a proxy's, an error's) are. Each
// request is logged at debug level to its context's logger (logctx), as
// the registry's are: `pinbot -v` shows what it asked the API server.
func New(rc *rest.Config) (*kubernetes.Clientset, error) {
	c := rest.CopyConfig(rc)
	c.ContentType = runtime.ContentTypeProtobuf
	c.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return logged{rt} })
	return kubernetes.NewForConfig(c)
}

// logged logs each request at debug level, once its answer's status is in.
type logged struct{ next http.RoundTripper }

func (l logged) RoundTrip(req *http.Request) (*http.Response, error) {
	log := logctx.From(req.Context())
	if !log.Enabled(req.Context(), slog.LevelDebug) {
		return l.next.RoundTrip(req)
	}
	start := time.Now()
	resp, err := l.next.RoundTrip(req)
	status := "error"
	if err == nil {
		status = resp.Status
	}
	log.Debug("kube request", "method", req.Method, "host", req.URL.Host, "path", req.URL.Path, "query", req.URL.RawQuery,
		"status", status, "took", time.Since(start).Round(time.Millisecond).String())
	return resp, err
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
