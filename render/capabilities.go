package render

import (
	"fmt"
	"path"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
)

// CapabilitiesTTL is how long Cached serves the Capabilities it read: long
// enough that a busy loop does not list the API on every render, short
// enough that a CRD installed by hand counts within minutes.
const CapabilitiesTTL = 10 * time.Minute

// Cached returns a reader of dc's Capabilities, for WithDiscovery, that
// reads them (Discover) when what it read last is older than
// CapabilitiesTTL. A failed read is not kept.
func Cached(dc discovery.DiscoveryInterface) func() (Capabilities, error) {
	var (
		mu   sync.Mutex
		caps Capabilities
		at   time.Time
	)
	return func() (Capabilities, error) {
		mu.Lock()
		defer mu.Unlock()
		if !at.IsZero() && time.Since(at) < CapabilitiesTTL {
			return caps, nil
		}
		read, err := Discover(dc)
		if err != nil {
			return Capabilities{}, err
		}
		caps, at = read, time.Now()
		return caps, nil
	}
}

// Discover reads the cluster's Capabilities through its discovery API: the
// server version, and every served group version with and without each of
// its kinds ("apps/v1", "apps/v1/Deployment"), as Helm itself builds them.
// A group the server fails to list (an aggregated API that is down) is
// left out rather than failing the render.
func Discover(dc discovery.DiscoveryInterface) (Capabilities, error) {
	v, err := dc.ServerVersion()
	if err != nil {
		return Capabilities{}, fmt.Errorf("reading the cluster's version: %w", err)
	}
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return Capabilities{}, fmt.Errorf("reading the cluster's API versions: %w", err)
	}
	caps := Capabilities{KubeVersion: v.GitVersion}
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			caps.APIVersions = append(caps.APIVersions, s)
		}
	}
	for _, l := range lists {
		add(l.GroupVersion)
		for _, r := range l.APIResources {
			add(path.Join(l.GroupVersion, r.Kind))
		}
	}
	return caps, nil
}
