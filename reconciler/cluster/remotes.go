package cluster

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/internal/coalesce"
	"pinbot.dev/pinbot/internal/httpbound"
	"pinbot.dev/pinbot/internal/kubeclient"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler/spoke"
)

// remoteSyncTimeout bounds the first fill of a spoke's watch caches: a
// spoke that accepts connections and never answers is Unknown after it.
const remoteSyncTimeout = 20 * time.Second

// secretsTTL is how long a namespace's list of Argo CD cluster Secrets
// is reused: a rotated credential is picked up within it.
const secretsTTL = time.Minute

// Remotes are the spokes, by Argo CD cluster Secret.
type Remotes struct {
	kube   kubernetes.Interface // pinbot's own cluster, holding the Secrets
	trust  spoke.Trust
	answer time.Duration
	agent  string // the User-Agent of the spokes' clients
	h      Handlers

	mu      sync.Mutex
	byKey   map[string]*remote    // "<namespace>/<secret>"
	secrets map[string]secretList // kubeconfig Secrets, by "<namespace>/<name>"
	// lists are the listings of Argo CD's cluster Secrets, by namespace:
	// the passes that need one when the last is a secretsTTL old share
	// one LIST, not one each.
	lists coalesce.Fresh[[]corev1.Secret]
}

type remote struct {
	*Cluster
	version string // the Secret's resourceVersion the clients were made from
}

type secretList struct {
	at    time.Time
	items []corev1.Secret
}

// NewRemotes returns no spokes yet. Their Secrets are read with kube as
// trust allows; each spoke's API responses are bounded by answer, and h
// is told of changes in its caches (ObjectChanged as Changed). Their
// clients say agent as their User-Agent ("" for client-go's).
func NewRemotes(kube kubernetes.Interface, trust spoke.Trust, answer time.Duration, agent string, h Handlers) *Remotes {
	h.ObjectChanged = func(_ schema.GroupVersionResource, ns, name string) { h.Changed(ns, []string{name}) }
	return &Remotes{kube: kube, trust: trust, answer: answer, agent: agent, h: h, byKey: map[string]*remote{}, secrets: map[string]secretList{},
		lists: coalesce.Fresh[[]corev1.Secret]{Keep: secretsTTL}}
}

// Close stops every spoke's watches.
func (rs *Remotes) Close() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.byKey {
		r.Close()
	}
	rs.byKey = map[string]*remote{}
}

// Forget is Watcher.Forget in every spoke.
func (rs *Remotes) Forget(app string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.byKey {
		r.Pods.Forget(app)
	}
}

// get returns one Secret, read at most once a secretsTTL.
func (rs *Remotes) get(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	key := ns + "/" + name
	rs.mu.Lock()
	l, ok := rs.secrets[key]
	rs.mu.Unlock()
	if ok && time.Since(l.at) < secretsTTL && len(l.items) == 1 {
		return &l.items[0], nil
	}
	s, err := rs.kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
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
// secretsTTL, however many passes ask at once.
func (rs *Remotes) list(ctx context.Context, ns string) ([]corev1.Secret, error) {
	return rs.lists.DoSince(ctx, ns, time.Now().Add(-secretsTTL), func(ctx context.Context) ([]corev1.Secret, error) {
		list, err := rs.kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: spoke.ArgoCDSecretLabel + "=" + spoke.ArgoCDSecretType})
		switch {
		case apierrors.IsForbidden(err):
			return nil, fmt.Errorf("listing Argo CD's cluster Secrets in %s: %w (grant it with the component deploy/components/argocd-clusters)", ns, err)
		case err != nil:
			return nil, fmt.Errorf("listing Argo CD's cluster Secrets in %s: %w", ns, err)
		}
		return list.Items, nil
	})
}

// clients returns the spoke's clients, made anew when its Secret (key, at
// resourceVersion version, with labels) changed.
func (rs *Remotes) clients(key, version string, labels map[string]string, a spoke.Cluster) (*Cluster, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r := rs.byKey[key]; r != nil && r.version == version {
		return r.Cluster, nil
	}
	rc := rest.CopyConfig(a.Config)
	rc.WrapTransport = httpbound.WrapAfter(rc.WrapTransport, rs.answer)
	// Innermost, below the exec plugin's and token auth: its tokens are
	// registered before a spoke could echo them into an error or log.
	rc.Wrap(redact.Credentials)
	trip := &tripwire{}
	rc.Wrap(trip.wrap)
	rc.QPS, rc.Burst = 50, 100
	rc.UserAgent = rs.agent
	kube, err := kubeclient.New(rc)
	if err != nil {
		return nil, fmt.Errorf("creating the client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("creating the client: %w", err)
	}
	md, err := metadata.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("creating the client: %w", err)
	}
	name := a.Name
	if name == "" {
		name = a.Server
	}
	if old := rs.byKey[key]; old != nil {
		old.Close()
	}
	c := New(name, a.Server, kube, dyn, md, rs.h, remoteSyncTimeout)
	c.Labels = maps.Clone(labels)
	trip.alive.Store(c.alive)
	rs.byKey[key] = &remote{Cluster: c, version: version}
	return c, nil
}
