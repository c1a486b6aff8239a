package cluster

import (
	"cmp"

	"github.com/prometheus/client_golang/prometheus"
)

var heldDesc = prometheus.NewDesc("pinbot_cache_namespace",
	"1 for each namespace whose Pods, ReplicaSets and ControllerRevisions this replica caches, by cluster (in-cluster for pinbot's own); namespace \"*\" is a cache of the whole cluster. With shards, a replica's namespaces are its apps'.",
	[]string{"cluster", "namespace"}, nil)

// Held reports, at scrape time, what the Pod caches of local and of the
// spokes hold: pinbot_cache_namespace{cluster,namespace}.
func Held(local *Cluster, remotes *Remotes) prometheus.Collector { return held{local, remotes} }

type held struct {
	local   *Cluster
	remotes *Remotes
}

func (h held) Describe(ch chan<- *prometheus.Desc) { ch <- heldDesc }

func (h held) Collect(ch chan<- prometheus.Metric) {
	cs := []*Cluster{h.local}
	h.remotes.mu.Lock()
	for _, r := range h.remotes.byKey {
		cs = append(cs, r.Cluster)
	}
	h.remotes.mu.Unlock()
	for _, c := range cs {
		for _, ns := range c.Pods.Namespaces() {
			ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, 1, cmp.Or(c.Name, "in-cluster"), cmp.Or(ns, "*"))
		}
	}
}
