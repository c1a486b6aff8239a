// Package kubemetrics counts client-go's requests to the Kubernetes API
// servers and how long its rate limiter held them, for serve's /metrics.
package kubemetrics

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/metrics"
)

// client-go's requests to the Kubernetes API servers, by result, and how
// long its rate limiter (the QPS and burst of each cluster's client) held
// them: when pinbot, not the API server, holds its requests back. They
// are process-wide, as client-go's metrics hooks are.
var (
	kubeRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_kube_requests_total",
		Help: "Requests to the Kubernetes API servers, by method and result: the status code's class, or error.",
	}, []string{"method", "result"})
	kubeThrottled = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "pinbot_kube_client_throttled_seconds",
		Help:    "How long client-go's rate limiter (pinbot's QPS and burst per cluster) held each request to a Kubernetes API server before sending it, by method and resource (\"\" for discovery).",
		Buckets: []float64{0.001, 0.01, 0.05, 0.25, 1, 5, 30},
	}, []string{"method", "resource"})
	registerKubeMetrics sync.Once
)

// Collectors are those metrics; the first call has client-go report
// to them.
func Collectors() []prometheus.Collector {
	registerKubeMetrics.Do(func() {
		metrics.Register(metrics.RegisterOpts{RequestResult: kubeResults{}, RateLimiterLatency: kubeWaits{}})
	})
	return []prometheus.Collector{kubeRequests, kubeThrottled}
}

type kubeResults struct{}

// Increment implements metrics.ResultMetric. code is the status code, or
// "<error>".
func (kubeResults) Increment(_ context.Context, code, method, _ string) {
	result := "error"
	if n, err := strconv.Atoi(code); err == nil {
		result = strconv.Itoa(n/100) + "xx"
	}
	kubeRequests.WithLabelValues(method, result).Inc()
}

type kubeWaits struct{}

// Observe implements metrics.LatencyMetric.
func (kubeWaits) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	resource, _ := Resource(u.Path)
	kubeThrottled.WithLabelValues(verb, resource).Observe(latency.Seconds())
}

// Resource names the resource a request's path reaches, as RBAC does:
// "pods", "pods/log", "leases.coordination.k8s.io"; "" for discovery and
// the API server's own paths. Object names and namespaces are left out,
// so the name takes as many values as there are kinds. named says the
// path names one object (a GET of it, not a LIST).
func Resource(path string) (resource string, named bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	group := ""
	switch {
	case len(segs) > 2 && segs[0] == "api":
		segs = segs[2:]
	case len(segs) > 3 && segs[0] == "apis":
		group, segs = segs[1], segs[3:]
	default:
		return "", false
	}
	if segs[0] == "namespaces" && len(segs) > 2 {
		segs = segs[2:]
	}
	resource = segs[0]
	if len(segs) > 2 {
		resource += "/" + segs[2]
	}
	if group != "" {
		resource += "." + group
	}
	return resource, len(segs) > 1
}
