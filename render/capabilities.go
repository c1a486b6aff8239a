package render

import (
	"fmt"
	"path"

	"k8s.io/client-go/discovery"
)

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
