package record

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// recordsSelector selects the records' ConfigMaps; historyOfLabel names
// the app whose record one is.
const recordsSelector, historyOfLabel = "app.kubernetes.io/managed-by=pinbot", "pinbot.dev/history-of"

// follower watches the records of the state namespace, keeping only
// their names and resourceVersions: BeginCached then trusts its copy of
// a record for as long as the watch says nobody wrote it since, with no
// TTL, so an idle app's pass never reads its record again.
type follower struct {
	start, end sync.Once
	stop       chan struct{}
	inf        cache.SharedIndexInformer
}

// Follow starts watching the records until Close; it returns at once,
// and BeginCached relies on the watch once its first LIST is in. Only
// the process that alone writes its apps' records follows them, as for
// BeginCached. Calling it again does nothing.
func (h *History) Follow() {
	h.follow.start.Do(func() {
		f := informers.NewSharedInformerFactoryWithOptions(h.client, 0,
			informers.WithNamespace(h.namespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = recordsSelector }),
			informers.WithTransform(versionOnly))
		inf := f.Core().V1().ConfigMaps().Informer()
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.follow.stop == nil { // not closed before
			h.follow.inf, h.follow.stop = inf, make(chan struct{})
			go inf.Run(h.follow.stop)
		}
	})
}

// Close stops Follow's watch.
func (h *History) Close() {
	h.follow.end.Do(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.follow.stop != nil {
			close(h.follow.stop)
		}
		h.follow.stop = make(chan struct{}) // a later Follow starts nothing
	})
}

// versionOnly keeps of a record's ConfigMap what the store keys it by
// and its resourceVersion: ten thousand records are then a few MB.
func versionOnly(obj any) (any, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return obj, nil
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: cm.Name, Namespace: cm.Namespace, UID: cm.UID, ResourceVersion: cm.ResourceVersion,
	}}, nil
}

// watched reports whether the watch is in, and if so whether it has seen
// the record of app at the version of cm (nil: no record).
func (h *History) watched(app string, cm *corev1.ConfigMap) (following, current bool) {
	h.mu.Lock()
	inf := h.follow.inf
	h.mu.Unlock()
	if inf == nil || !inf.HasSynced() {
		return false, false
	}
	obj, exists, err := inf.GetStore().GetByKey(h.namespace + "/" + configMapName(app))
	if err != nil {
		return true, false
	}
	if cm == nil || !exists {
		return true, cm == nil && !exists
	}
	seen, ok := obj.(*corev1.ConfigMap)
	return true, ok && seen.ResourceVersion == cm.ResourceVersion
}
