package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/internal/httpbound"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/spoke"
	"pinbot.dev/pinbot/reconciler/ssa"
)

// cluster is where Pods run and are read: the cluster pinbot runs
// against, or another one an Argo CD destination names (a spoke). Each
// has its own clients, rate limit and watch caches, so a spoke that does
// not answer holds up only its own apps.
type cluster struct {
	// name is "" for pinbot's own cluster; a spoke's name, else its
	// server.
	name, server string
	applier      *ssa.Applier
	watcher      *watcher
	// lives are the watch caches of the apps' inventories pinbot applies
	// here.
	lives *liveCache
	// objects are the watch caches of the workloads verify-only apps
	// read here, and on pinbot's own cluster the deployers' objects.
	objects *objectCache
	// alive says whether the caches may be trusted: see liveness.
	alive *liveness
}

// answers returns nil when c's watch caches may be read: its API server
// answered lately and no watch has failed since, or it answers now. The
// error names c when c is a spoke.
func (c *cluster) answers(ctx context.Context) error {
	return c.fault(c.alive.check(ctx))
}

// ClusterError is a spoke that could not be read: its apps are Unknown,
// and the error names the cluster. Credentials never show in it.
type ClusterError struct {
	Cluster, Server string
	Err             error
}

// Error implements error.
func (e *ClusterError) Error() string {
	if e.Server == "" {
		return redact.String(fmt.Sprintf("cluster %s: %s", e.Cluster, e.Err))
	}
	return redact.String(fmt.Sprintf("cluster %s (%s): %s", e.Cluster, redact.URL(e.Server), e.Err))
}

// Unwrap returns the underlying error.
func (e *ClusterError) Unwrap() error { return e.Err }

// fault names c in err, when c is a spoke.
func (c *cluster) fault(err error) error {
	if c.name == "" || err == nil {
		return err
	}
	var ce *ClusterError
	if errors.As(err, &ce) {
		return err
	}
	return &ClusterError{Cluster: c.name, Server: c.server, Err: err}
}

// remoteSyncTimeout bounds the first fill of a spoke's watch caches: a
// spoke that accepts connections and never answers is Unknown after it.
const remoteSyncTimeout = 20 * time.Second

// secretsTTL is how long a namespace's list of Argo CD cluster Secrets
// is reused: a rotated credential is picked up within it.
const secretsTTL = time.Minute

// remotes are the spokes, by Argo CD cluster Secret.
type remotes struct {
	answer time.Duration

	mu      sync.Mutex
	byKey   map[string]*remote // "<namespace>/<secret>"
	secrets map[string]secretList
}

type remote struct {
	*cluster
	version string // the Secret's resourceVersion the clients were made from
}

type secretList struct {
	at    time.Time
	items []corev1.Secret
}

func newRemotes(answer time.Duration) *remotes {
	return &remotes{answer: answer, byKey: map[string]*remote{}, secrets: map[string]secretList{}}
}

func (rs *remotes) close() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.byKey {
		r.watcher.close()
		r.lives.close()
		r.objects.close()
	}
	rs.byKey = map[string]*remote{}
}

// clusterOf is the cluster d's deployer applies to: pinbot's own, or the
// spoke an Argo CD destination names, reached with the credentials of
// Argo CD's cluster Secret for it, read from the namespaces the
// operator's spoke.Trust names (Argo CD's own by default).
func (r *Reconciler) clusterOf(ctx context.Context, app *config.App, d *deployedApp) (*cluster, error) {
	dest := d.source.Cluster
	if dest == nil {
		return r.local, nil
	}
	if kc := dest.KubeConfig; kc != nil {
		return r.fluxCluster(ctx, kc)
	}
	if app.ArgoCD == nil {
		return nil, fmt.Errorf("app %s: only an Argo CD destination names another cluster", app.Name)
	}
	appNS, _ := app.ArgoCD.Object()
	fail := func(err error) (*cluster, error) {
		return nil, &ClusterError{Cluster: dest.String(), Server: dest.Server, Err: err}
	}
	namespaces := r.trust.SecretNamespaces(appNS)
	for _, ns := range namespaces {
		secrets, err := r.remotes.list(ctx, r.kube, ns)
		if err != nil {
			return fail(err)
		}
		for i := range secrets {
			s := &secrets[i]
			a, err := spoke.FromArgoCD(s.Data, r.trust, nil)
			if err != nil {
				named := spoke.Cluster{Name: string(s.Data["name"]), Server: string(s.Data["server"])}
				if named.Names(dest.Server, dest.Name) {
					return fail(fmt.Errorf("Argo CD's cluster Secret %s/%s: %w", ns, s.Name, err))
				}
				continue
			}
			if !a.Names(dest.Server, dest.Name) {
				continue
			}
			c, err := r.remotes.clients(ns+"/"+s.Name, s.ResourceVersion, a, r.changed, r.inventoryChanged)
			if err != nil {
				return fail(err)
			}
			return c, nil
		}
	}
	return fail(fmt.Errorf("no Argo CD cluster Secret (label %s=%s) in the namespaces pinbot reads them from (%s) names it",
		spoke.ArgoCDSecretLabel, spoke.ArgoCDSecretType, strings.Join(namespaces, ", ")))
}

// fluxCluster is the cluster a Flux Kustomization's kubeconfig Secret
// reaches: the Secret's key, or Flux's defaults "value" then
// "value.yaml".
func (r *Reconciler) fluxCluster(ctx context.Context, kc *deployer.SecretKey) (*cluster, error) {
	name := "kubeConfig " + kc.Namespace + "/" + kc.Name
	fail := func(err error) (*cluster, error) { return nil, &ClusterError{Cluster: name, Err: err} }
	s, err := r.remotes.get(ctx, r.kube, kc.Namespace, kc.Name)
	if err != nil {
		return fail(err)
	}
	keys := []string{kc.Key}
	if kc.Key == "" {
		keys = []string{"value", "value.yaml"}
	}
	var data []byte
	for _, k := range keys {
		if data = s.Data[k]; len(data) > 0 {
			break
		}
	}
	if len(data) == 0 {
		return fail(fmt.Errorf("Secret %s/%s has no key %s", kc.Namespace, kc.Name, strings.Join(keys, " or ")))
	}
	sc, err := spoke.FromKubeConfig(name, data, r.trust)
	if err != nil {
		return fail(fmt.Errorf("Secret %s/%s: %w", kc.Namespace, kc.Name, err))
	}
	c, err := r.remotes.clients(kc.Namespace+"/"+kc.Name, s.ResourceVersion, sc, r.changed, r.inventoryChanged)
	if err != nil {
		return fail(err)
	}
	return c, nil
}

// get returns one Secret, read at most once a secretsTTL.
func (rs *remotes) get(ctx context.Context, kube kubernetes.Interface, ns, name string) (*corev1.Secret, error) {
	key := ns + "/" + name
	rs.mu.Lock()
	l, ok := rs.secrets[key]
	rs.mu.Unlock()
	if ok && time.Since(l.at) < secretsTTL && len(l.items) == 1 {
		return &l.items[0], nil
	}
	s, err := kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("reading the kubeconfig Secret %s: %w (grant pinbot get on it)", key, err)
	case err != nil:
		return nil, fmt.Errorf("reading the kubeconfig Secret %s: %w", key, err)
	}
	rs.mu.Lock()
	rs.secrets[key] = secretList{at: time.Now(), items: []corev1.Secret{*s}}
	rs.mu.Unlock()
	return s, nil
}

// list returns ns's Argo CD cluster Secrets, listed at most once a
// secretsTTL.
func (rs *remotes) list(ctx context.Context, kube kubernetes.Interface, ns string) ([]corev1.Secret, error) {
	rs.mu.Lock()
	l, ok := rs.secrets[ns]
	rs.mu.Unlock()
	if ok && time.Since(l.at) < secretsTTL {
		return l.items, nil
	}
	list, err := kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: spoke.ArgoCDSecretLabel + "=" + spoke.ArgoCDSecretType})
	switch {
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("listing Argo CD's cluster Secrets in %s: %w (grant it with the component deploy/components/argocd-clusters)", ns, err)
	case err != nil:
		return nil, fmt.Errorf("listing Argo CD's cluster Secrets in %s: %w", ns, err)
	}
	rs.mu.Lock()
	rs.secrets[ns] = secretList{at: time.Now(), items: list.Items}
	rs.mu.Unlock()
	return list.Items, nil
}

// clients returns the spoke's clients, made anew when its Secret changed.
func (rs *remotes) clients(key, version string, a spoke.Cluster, changed func(namespace string, owners []string), inventoryChanged func(app string)) (*cluster, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r := rs.byKey[key]; r != nil && r.version == version {
		return r.cluster, nil
	}
	rc := rest.CopyConfig(a.Config)
	rc.WrapTransport = httpbound.WrapAfter(rc.WrapTransport, rs.answer)
	// Innermost, below the exec plugin's and token auth: its tokens are
	// registered before a spoke could echo them into an error or log.
	rc.Wrap(redact.Credentials)
	rc.QPS, rc.Burst = 50, 100
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("creating the client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("creating the client: %w", err)
	}
	name := a.Name
	if name == "" {
		name = a.Server
	}
	if old := rs.byKey[key]; old != nil {
		old.watcher.close()
		old.lives.close()
		old.objects.close()
	}
	alive := newLiveness(probeVersion(kube), time.Now)
	c := &cluster{name: name, server: a.Server, applier: ssa.New(dyn, kube.Discovery()), watcher: newWatcher(kube, alive, changed),
		lives: newLiveCache(dyn, alive, inventoryChanged), objects: newObjectCache(dyn, alive, func(_ schema.GroupVersionResource, ns, name string) { changed(ns, []string{name}) }), alive: alive}
	c.watcher.syncTimeout = remoteSyncTimeout
	rs.byKey[key] = &remote{cluster: c, version: version}
	return c, nil
}
