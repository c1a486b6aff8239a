package deployed

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/gitsource"
)

// Read reads the app's Application, or its Kustomization and
// GitRepository, and what they say.
// fresh reads them from the API server, not the watch (cluster.Objects).
func (rd *Reader) Read(ctx context.Context, app *config.App, fresh bool) (*App, error) {
	d := &App{}
	switch {
	case app.ArgoCD != nil:
		ns, name := app.ArgoCD.Object()
		u, err := rd.readObject(ctx, deployer.ApplicationsResource, deployer.ApplicationKind, ns, name, fresh)
		if err != nil {
			return nil, err
		}
		a, err := deployer.ApplicationFrom(u)
		if err != nil {
			return nil, err
		}
		d.Owner = OwnerRef(u)
		if d.Source, err = a.Source(); err != nil {
			return nil, err
		}
		if d.Revision, err = a.Deployed(d.Source); err != nil && !errors.Is(err, deployer.ErrNotDeployed) {
			return nil, err
		}
		d.Health, d.Workloads = a.Health(), a.Workloads()
	case app.Flux != nil && app.Flux.HelmRelease != "":
		return rd.readHelmRelease(ctx, app, fresh)
	case app.Flux != nil:
		ns, name := app.Flux.Object()
		u, err := rd.readObject(ctx, deployer.KustomizationsResource, deployer.KustomizationKind, ns, name, fresh)
		if err != nil {
			return nil, err
		}
		k, err := deployer.KustomizationFrom(u)
		if err != nil {
			return nil, err
		}
		d.Owner = OwnerRef(u)
		rns, rname, err := k.GitRepository()
		if err != nil {
			return nil, err
		}
		ru, err := rd.readObject(ctx, deployer.GitRepositoriesResource, deployer.GitRepositoryKind, rns, rname, fresh)
		if err != nil {
			return nil, err
		}
		repo, err := deployer.GitRepositoryFrom(ru)
		if err != nil {
			return nil, err
		}
		if d.Source, err = k.Source(repo); err != nil {
			return nil, err
		}
		if d.Revision, err = k.Deployed(); err != nil && !errors.Is(err, deployer.ErrNotDeployed) {
			return nil, err
		}
		if d.Workloads, err = k.Workloads(); err != nil {
			return nil, err
		}
		d.Health = k.Health()
	default:
		return nil, fmt.Errorf("app %s names no deployer", app.Name)
	}
	return d, nil
}

// readHelmRelease reads the app's HelmRelease and the source that holds
// its chart. The release's workloads are the render's: a HelmRelease
// keeps no inventory of what Helm applied.
func (rd *Reader) readHelmRelease(ctx context.Context, app *config.App, fresh bool) (*App, error) {
	ns, name := app.Flux.Object()
	u, err := rd.readObject(ctx, deployer.HelmReleasesResource, deployer.HelmReleaseKind, ns, name, fresh)
	if err != nil {
		return nil, err
	}
	h, err := deployer.HelmReleaseFrom(u)
	if err != nil {
		return nil, err
	}
	kind, sns, sname, err := h.ChartSource()
	if err != nil {
		return nil, err
	}
	src, err := rd.readChartSource(ctx, kind, sns, sname, fresh)
	if err != nil {
		return nil, err
	}
	d := &App{NoInventory: true, Owner: OwnerRef(u)}
	if d.Source, err = h.Source(src); err != nil {
		return nil, err
	}
	if d.Revision, err = h.Deployed(); err != nil && !errors.Is(err, deployer.ErrNotDeployed) {
		return nil, err
	}
	d.Health = h.Health()
	return d, nil
}

// readChartSource reads the source object of a HelmRelease's chart, of a
// kind ChartSource names.
func (rd *Reader) readChartSource(ctx context.Context, kind, ns, name string, fresh bool) (any, error) {
	res := map[string]schema.GroupVersionResource{
		deployer.HelmRepositoryKind: deployer.HelmRepositoriesResource,
		deployer.GitRepositoryKind:  deployer.GitRepositoriesResource,
		deployer.OCIRepositoryKind:  deployer.OCIRepositoriesResource,
	}[kind]
	u, err := rd.readObject(ctx, res, kind, ns, name, fresh)
	if err != nil {
		return nil, err
	}
	switch kind {
	case deployer.HelmRepositoryKind:
		return deployer.HelmRepositoryFrom(u)
	case deployer.GitRepositoryKind:
		return deployer.GitRepositoryFrom(u)
	}
	return deployer.OCIRepositoryFrom(u)
}

// readObject GETs one deployer object. A missing or unreadable one says
// what to check.
func (rd *Reader) readObject(ctx context.Context, gvr schema.GroupVersionResource, kind, ns, name string, fresh bool) (*unstructured.Unstructured, error) {
	u, err := rd.Objects.Get(ctx, gvr, ns, name, fresh)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%s %s/%s (%s) not found: check the name and namespace in the config, and that the CRD is installed", kind, ns, name, gvr.GroupVersion())
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("reading %s %s/%s: %w (grant pinbot read access with the deployers component, deploy/components/deployers)", kind, ns, name, err)
	case err != nil:
		return nil, fmt.Errorf("reading %s %s/%s: %w", kind, ns, name, err)
	}
	return u, nil
}

// TrackedBranch resolves what the deployer tracks to a branch: Argo CD's
// HEAD is the remote's default branch, another targetRevision a branch
// name. A tag or a pinned commit has no head to verify against.
func TrackedBranch(ctx context.Context, src deployer.Source, auth gitforge.Auth) (string, error) {
	ref := src.Ref
	switch {
	case ref.Branch != "":
		return ref.Branch, nil
	case strings.HasPrefix(ref.Name, "refs/heads/"):
		return strings.TrimPrefix(ref.Name, "refs/heads/"), nil
	case ref.Revision == "HEAD":
		b, err := gitforge.DefaultBranch(ctx, src.RepoURL, auth)
		if err != nil {
			return "", &gitsource.Error{Repo: redact.URL(src.RepoURL), Err: err}
		}
		return b, nil
	case ref.Revision != "":
		return ref.Revision, nil
	}
	return "", fmt.Errorf("%s tracks %s: pinbot follows a branch, and verifies against its head", src.Object, ref)
}
