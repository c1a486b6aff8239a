// Package kubemetrics counts client-go's requests to the Kubernetes API
// servers and how long its rate limiter held them, for serve's /metrics.
package kubemetrics

import (
	"context"
	"net/url"
	"strconv"
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
		Help:    "How long client-go's rate limiter (pinbot's QPS and burst per cluster) held each request to a Kubernetes API server before sending it, by method.",
		Buckets: []float64{0.001, 0.01, 0.05, 0.25, 1, 5, 30},
	}, []string{"method"})
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
func (kubeWaits) Observe(_ context.Context, verb string, _ url.URL, latency time.Duration) {
	kubeThrottled.WithLabelValues(verb).Observe(latency.Seconds())
}
