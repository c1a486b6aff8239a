package reconciler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/render"
)

// headRender fetches the head of the tracked branch and renders it, or
// (follow, with a render at hand) reuses the last one.
func (r *Reconciler) headRender(ctx context.Context, tracked *App, st *appState, d *deployedApp, auth gitforge.Auth, follow bool) (string, []*unstructured.Unstructured, error) {
	st.mu.Lock()
	head, cached := st.vo.head, st.vo.renders[st.vo.head]
	st.mu.Unlock()
	if follow && cached != nil {
		return head, cached, nil
	}
	var objs []*unstructured.Unstructured
	err := r.source.With(ctx, tracked, auth, func(rev Revision) error {
		head = rev.Commit
		st.mu.Lock()
		objs = st.vo.renders[head]
		st.mu.Unlock()
		if objs != nil {
			return nil
		}
		var err error
		objs, err = r.renderDeployed(rev.Dir, d)
		return err
	})
	if err != nil {
		return head, nil, err
	}
	st.mu.Lock()
	st.vo.head, st.vo.tracked = head, App{Name: tracked.Name, Repo: tracked.Repo, Branch: tracked.Branch}
	st.vo.renders = keepRenders(st.vo.renders, head, d.revision.Commit)
	st.vo.renders[head] = objs
	st.mu.Unlock()
	return head, objs, nil
}

// deployedRender renders the revision the deployer deployed, from a clone
// that holds the branch's history.
func (r *Reconciler) deployedRender(ctx context.Context, tracked *App, st *appState, d *deployedApp, auth gitforge.Auth) ([]*unstructured.Unstructured, error) {
	commit := d.revision.Commit
	st.mu.Lock()
	objs := st.vo.renders[commit]
	st.mu.Unlock()
	if objs != nil {
		return objs, nil
	}
	err := r.source.withCommit(ctx, tracked, commit, auth, func(rev Revision) error {
		var err error
		objs, err = r.renderDeployed(rev.Dir, d)
		return err
	})
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	if st.vo.renders == nil {
		st.vo.renders = map[string][]*unstructured.Unstructured{}
	}
	st.vo.renders[commit] = objs
	st.mu.Unlock()
	return objs, nil
}

// keepRenders drops the renders of commits other than head and deployed.
func keepRenders(m map[string][]*unstructured.Unstructured, head, deployed string) map[string][]*unstructured.Unstructured {
	out := map[string][]*unstructured.Unstructured{}
	for c, objs := range m {
		if c == head || c == deployed {
			out[c] = objs
		}
	}
	return out
}

// renderDeployed renders the checkout at root as the deployer does: the
// source path, a chart with the Application's Helm settings, namespaced
// objects that name no namespace in the destination namespace. It returns
// the workloads only: the rest is the deployer's business.
func (r *Reconciler) renderDeployed(root string, d *deployedApp) ([]*unstructured.Unstructured, error) {
	rel := d.path()
	var opts []render.Option
	if h := d.source.Helm; h != nil && isChart(filepath.Join(root, filepath.FromSlash(rel))) {
		hr := render.Helm{ReleaseName: h.ReleaseName, Namespace: h.Namespace, Values: h.Values}
		for _, f := range h.ValueFiles {
			if h.IgnoreMissingValueFiles && !fileExists(filepath.Join(root, filepath.FromSlash(rel), filepath.FromSlash(f))) {
				continue
			}
			hr.ValueFiles = append(hr.ValueFiles, f)
		}
		for _, p := range h.Parameters {
			hr.Parameters = append(hr.Parameters, render.Parameter{Name: p.Name, Value: p.Value, ForceString: p.ForceString})
		}
		if hr.Namespace == "" {
			hr.Namespace = d.namespace()
		}
		opts = append(opts, render.WithHelm(hr))
		if h.KubeVersion != "" || len(h.APIVersions) > 0 {
			caps, err := r.caps.get()
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
	objs, err := r.render(root, rel, opts...)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if !deployer.IsWorkload(gvk.Group, gvk.Kind) {
			continue
		}
		o = o.DeepCopy()
		if o.GetNamespace() == "" {
			o.SetNamespace(d.namespace())
		}
		out = append(out, o)
	}
	return out, nil
}

func isChart(dir string) bool { return fileExists(filepath.Join(dir, "Chart.yaml")) }

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// selectWorkloads keeps the rendered workloads the deployer applied.
func selectWorkloads(objs []*unstructured.Unstructured, applied []deployer.Ref) []*unstructured.Unstructured {
	want := map[ObjectRef]bool{}
	for _, w := range applied {
		want[ObjectRef{Group: w.Group, Kind: w.Kind, Namespace: w.Namespace, Name: w.Name}] = true
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if want[RefOf(o)] {
			out = append(out, o)
		}
	}
	return out
}

// withCommit checks out commit of app's branch, from a clone with the
// branch's history kept next to the shallow one With uses, and calls fn
// with it, holding a lock of its own.
func (s *Source) withCommit(ctx context.Context, app *App, commit string, auth gitforge.Auth, fn func(Revision) error) error {
	lock := s.lock(app.Name + "@history")
	lock.Lock()
	defer lock.Unlock()
	sum := sha256.Sum256([]byte(app.Repo + "\x00" + app.Branch))
	dir := filepath.Join(s.dir, "git-history", app.Name+"-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the clone cache: %w", err)
	}
	if err := gitforge.CheckoutCommit(ctx, app.Repo, app.Branch, commit, dir, auth); err != nil {
		if errors.Is(err, gitforge.ErrCommitNotFound) {
			return err
		}
		return &SourceError{Repo: redact.URL(app.Repo), Err: err}
	}
	return fn(Revision{Commit: commit, Dir: dir})
}
