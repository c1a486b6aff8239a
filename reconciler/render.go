package reconciler

import (
	"context"
	"io/fs"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"

	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/render"
)

// capabilitiesTTL is how long the cluster's discovered version and API
// versions serve Helm renders before they are read again: long enough that
// a busy loop does not list the API on every pass, short enough that a CRD
// installed by hand counts within minutes.
const capabilitiesTTL = 10 * time.Minute

// capabilities caches what the cluster tells a Helm chart through
// .Capabilities (render.Discover). A failed read is not cached.
type capabilities struct {
	dc  discovery.DiscoveryInterface
	now func() time.Time

	mu   sync.Mutex
	caps render.Capabilities
	at   time.Time
}

func newCapabilities(dc discovery.DiscoveryInterface, now func() time.Time) *capabilities {
	return &capabilities{dc: dc, now: now}
}

// get returns the cached capabilities, reading them when older than
// capabilitiesTTL.
func (c *capabilities) get() (render.Capabilities, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && c.now().Sub(c.at) < capabilitiesTTL {
		return c.caps, nil
	}
	caps, err := render.Discover(c.dc)
	if err != nil {
		return render.Capabilities{}, err
	}
	c.caps, c.at = caps, c.now()
	return caps, nil
}

// render renders the manifests at rel of fsys, a revision's files. A Helm
// chart is rendered for this cluster: its KubeVersion and APIVersions come
// from discovery (Helm's own defaults, v1.20 under go test, would fail
// charts with a kubeVersion constraint). opts add the Helm settings.
func (r *Reconciler) render(ctx context.Context, fsys fs.FS, rel string, opts ...render.Option) ([]*unstructured.Unstructured, error) {
	opts = append([]render.Option{render.WithContext(ctx), render.WithDiscovery(r.caps.get)}, opts...)
	return render.FS(fsys, rel, opts...)
}

// renderOptions are the render options of app's path: a chart is
// rendered as the release named after the app (or helm.releaseName) in
// the app's namespace, with the helm block's values. With a helm block,
// a path that is not a chart is a render error.
func renderOptions(a *config.App) []render.Option {
	opts := []render.Option{render.WithRelease(a.Name, a.Namespace)}
	if a.Helm == nil {
		return opts
	}
	h := render.Helm{ReleaseName: a.Helm.ReleaseName, Namespace: a.Namespace, ValueFiles: a.Helm.ValueFiles}
	h.Values, _ = config.JSONValues(a.Helm.Values) // problems checked it
	for _, p := range a.Helm.Parameters {
		h.Parameters = append(h.Parameters, render.Parameter{Name: p.Name, Value: p.Value, ForceString: p.ForceString})
	}
	return append(opts, render.WithHelm(h))
}
