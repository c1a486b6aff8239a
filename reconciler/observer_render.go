package reconciler

import (
	"context"
	"io/fs"
	"path"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler/chartrepo"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployed"
	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/fluxinputs"
	"pinbot.dev/pinbot/reconciler/gitsource"
	"pinbot.dev/pinbot/render"
)

// headRender fetches the head of the tracked branch and renders it, or
// (following a rollout, with a render at hand) reuses the last one.
func (ob *observer) headRender(ctx context.Context, p *pass, d *deployed.App, auth gitforge.Auth) (string, []*unstructured.Unstructured, error) {
	st := p.st
	head := st.vo.head
	if cached, ok := st.vo.renders.Get(head); p.mode == modeFollow && ok {
		return head, cached, nil
	}
	var objs []*unstructured.Unstructured
	version := st.vo.headVersion
	fetch := ob.r.source.Recent
	if p.fresh { // a push woke the pass: a head fetched after it
		fetch = ob.r.source.Head
	}
	err := fetch(ctx, p.tracked.Repo, p.tracked.Branch, auth, func(rev gitsource.Revision) error {
		head = rev.Commit
		reads := newReadFS(rev.FS)
		if d.Revision.Version != "" {
			var err error
			if version, err = render.ChartVersion(reads, d.Root()); err != nil {
				return err
			}
		}
		var ok bool
		if objs, ok = st.vo.renders.Get(head); ok {
			return nil
		}
		var err error
		if objs, err = ob.render(ctx, reads, d); err == nil {
			st.setInputs(&inputs{repo: p.tracked.Repo, branch: p.tracked.Branch, auth: auth, read: reads.read()})
		}
		return err
	})
	if err != nil {
		return head, nil, err
	}
	st.track(config.App{Name: p.tracked.Name, Repo: p.tracked.Repo, Branch: p.tracked.Branch})
	st.vo.head, st.vo.headVersion = head, version
	st.vo.renders.Only(head, d.Revision.Commit)
	st.vo.renders.Put(head, objs)
	return head, objs, nil
}

// chartRender fetches the chart of a Helm repository the source names,
// at the newest version its targetRevision allows, and renders it, or
// (following a rollout, with a render at hand) reuses the last one. The
// version is the head.
func (ob *observer) chartRender(ctx context.Context, p *pass, d *deployed.App) (string, []*unstructured.Unstructured, error) {
	st := p.st
	if cached, ok := st.vo.renders.Get(st.vo.head); p.mode == modeFollow && ok {
		return st.vo.head, cached, nil
	}
	head, objs, err := ob.renderChart(ctx, p, d, d.Source.Chart.Version)
	if err != nil {
		return "", nil, err
	}
	st.track(config.App{Name: p.tracked.Name, Repo: d.Source.RepoURL})
	st.vo.head = head
	st.vo.renders.Only(head, d.Revision.Commit)
	st.vo.renders.Put(head, objs)
	return head, objs, nil
}

// renderChart fetches version (a version or a range) of the source's
// chart and renders it, reusing a render of the exact version. A chart
// that cannot be fetched is a *gitsource.Error.
func (ob *observer) renderChart(ctx context.Context, p *pass, d *deployed.App, version string) (string, []*unstructured.Unstructured, error) {
	c := d.Source.Chart
	chart, err := ob.r.charts.Fetch(ctx, chartrepo.Ref{RepoURL: c.RepoURL, Name: c.Name, Version: version}, ob.deployed.ChartAuth(c))
	if err != nil {
		return "", nil, &gitsource.Error{Repo: redact.URL(c.RepoURL), Err: err}
	}
	if objs, ok := p.st.vo.renders.Get(chart.Version); ok {
		return chart.Version, objs, nil
	}
	objs, err := ob.render(ctx, chart.FS, d)
	return chart.Version, objs, err
}

// deployedRender renders the revision the deployer deployed, from a clone
// that holds the branch's history, or the chart version it deployed.
func (ob *observer) deployedRender(ctx context.Context, p *pass, d *deployed.App, auth gitforge.Auth) ([]*unstructured.Unstructured, error) {
	commit := d.Revision.Commit
	if objs, ok := p.st.vo.renders.Get(commit); ok {
		return objs, nil
	}
	var objs []*unstructured.Unstructured
	var err error
	if d.Source.Chart != nil {
		_, objs, err = ob.renderChart(ctx, p, d, commit)
	} else {
		err = ob.r.source.At(ctx, p.tracked.Repo, p.tracked.Branch, commit, auth, func(rev gitsource.Revision) error {
			var err error
			objs, err = ob.render(ctx, rev.FS, d)
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	p.st.vo.renders.Put(commit, objs)
	return objs, nil
}

// render renders the revision's files as the deployer does: the
// source path, a chart with the Application's Helm settings, namespaced
// objects that name no namespace in the destination namespace. It returns
// the workloads only: the rest is the deployer's business.
func (ob *observer) render(ctx context.Context, fsys fs.FS, d *deployed.App) ([]*unstructured.Unstructured, error) {
	rel := d.Root()
	var opts []render.Option
	if h := d.Source.Helm; h != nil && render.IsChart(fsys, rel) {
		hr := render.Helm{ReleaseName: h.ReleaseName, Namespace: h.Namespace, Values: h.Values}
		if len(h.ValuesFrom) > 0 {
			var err error
			if hr.Values, err = fluxinputs.HelmValues(ctx, ob.r.kube, h); err != nil {
				return nil, err
			}
		}
		for _, f := range h.ValueFiles {
			if h.IgnoreMissingValueFiles && !fileExists(fsys, path.Join(rel, f)) {
				continue
			}
			hr.ValueFiles = append(hr.ValueFiles, f)
		}
		for _, p := range h.Parameters {
			hr.Parameters = append(hr.Parameters, render.Parameter{Name: p.Name, Value: p.Value, ForceString: p.ForceString})
		}
		if hr.Namespace == "" {
			hr.Namespace = d.Namespace()
		}
		opts = append(opts, render.WithHelm(hr))
		if h.KubeVersion != "" || len(h.APIVersions) > 0 {
			caps, err := ob.r.caps()
			if err != nil {
				return nil, err
			}
			if h.KubeVersion != "" {
				caps.KubeVersion = h.KubeVersion
			}
			if len(h.APIVersions) > 0 {
				caps.APIVersions = h.APIVersions
			}
			opts = append(opts, render.WithCapabilities(caps))
		}
	}
	if k := d.Source.Kustomize; len(k) > 0 {
		opts = append(opts, render.WithOverrides(k))
	}
	objs, err := ob.r.render(ctx, fsys, rel, opts...)
	if err != nil {
		return nil, err
	}
	if sub := d.Source.Substitute; sub != nil {
		vars, err := fluxinputs.Vars(ctx, ob.r.kube, sub)
		if err != nil {
			return nil, err
		}
		if objs, err = render.Substitute(objs, vars); err != nil {
			return nil, err
		}
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if !deployer.IsWorkload(gvk.Group, gvk.Kind) {
			continue
		}
		o = o.DeepCopy()
		if o.GetNamespace() == "" {
			o.SetNamespace(d.Namespace())
		}
		out = append(out, o)
	}
	return out, nil
}

func fileExists(fsys fs.FS, name string) bool {
	_, err := fs.Stat(fsys, name)
	return err == nil
}
