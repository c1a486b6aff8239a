// Package peermetrics counts the HTTP requests pinbot makes to its peers,
// the registry and Git, by their result, as client-go counts its own:
// one process-wide counter, which serve exports on /metrics.
package peermetrics

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	registry = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_registry_requests_total",
		Help: "HTTP requests to container registries, each attempt of a retry counted, by result: the status code's class (2xx, 3xx, 4xx, 5xx) or error (no response).",
	}, []string{"result"})
	git = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_git_requests_total",
		Help: "HTTP requests to Git and the forge, by api (git: fetches and pushes; forge: Gitea's API) and result: the status code's class, or error.",
	}, []string{"api", "result"})
)

// Collectors are the counters, for a registry that exports them.
func Collectors() []prometheus.Collector { return []prometheus.Collector{registry, git} }

// Registry wraps a transport to registries.
func Registry(rt http.RoundTripper) http.RoundTripper {
	return &counting{base: rt, count: func(r string) { registry.WithLabelValues(r).Inc() }}
}

// Git wraps a transport of Git's smart HTTP protocol.
func Git(rt http.RoundTripper) http.RoundTripper {
	return &counting{base: rt, count: func(r string) { git.WithLabelValues("git", r).Inc() }}
}

// Forge wraps a transport to the forge's API.
func Forge(rt http.RoundTripper) http.RoundTripper {
	return &counting{base: rt, count: func(r string) { git.WithLabelValues("forge", r).Inc() }}
}

type counting struct {
	base  http.RoundTripper
	count func(result string)
}

// RoundTrip implements http.RoundTripper.
func (c *counting) RoundTrip(req *http.Request) (*http.Response, error) {
	base := c.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		c.count("error")
		return resp, err
	}
	c.count(strconv.Itoa(resp.StatusCode/100) + "xx")
	return resp, nil
}
