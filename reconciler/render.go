package reconciler

import (
	"context"
	"io/fs"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/render"
)

// render renders the manifests at rel of fsys, a revision's files. A Helm
// chart is rendered for this cluster: its KubeVersion and APIVersions come
// from discovery (Helm's own defaults, v1.20 under go test, would fail
// charts with a kubeVersion constraint). opts add the Helm settings.
func (r *Reconciler) render(ctx context.Context, fsys fs.FS, rel string, opts ...render.Option) ([]*unstructured.Unstructured, error) {
	opts = append([]render.Option{render.WithContext(ctx), render.WithDiscovery(r.caps)}, opts...)
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
