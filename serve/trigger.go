package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"pinbot.dev/pinbot/internal/logctx"
)

// The objects `pinbot serve --leader-elect` keeps in the state namespace.
const (
	// leaseName is the Lease the replicas elect a leader through.
	leaseName = "pinbot"
	// triggerName is the ConfigMap a follower annotates to forward a
	// webhook to the leader.
	triggerName = "pinbot-trigger"
	// annotationRequestedAt holds the time of the newest forwarded request.
	annotationRequestedAt = "pinbot.dev/requested-at"
	// triggerAppPrefix prefixes one annotation per app, holding the time
	// that app was last asked for; one key per app, so concurrent
	// forwards of different apps never overwrite each other.
	triggerAppPrefix = "apps.pinbot.dev/"
	// triggerPromotePrefix prefixes one annotation per promote repository
	// and image, holding a forwarded package event (promoteRequest as
	// JSON): the newest pushed tag of that image wins.
	triggerPromotePrefix = "promote.pinbot.dev/"
)

// promoteRequest is a package event a follower forwards to the leader:
// promote Image:Tag into Repo (a promote entry of the config).
type promoteRequest struct {
	Repo  string `json:"repo"`
	Image string `json:"image"`
	Tag   string `json:"tag"`
	// At tells two requests of the same tag apart, so a repeated push is
	// forwarded again.
	At string `json:"at"`
}

// key is the request's annotation key: one per repository and image,
// named by a hash since both hold characters a key may not.
func (p promoteRequest) key() string {
	h := sha256.Sum256([]byte(p.Repo + " " + p.Image))
	return triggerPromotePrefix + hex.EncodeToString(h[:8])
}

// forwardPromotion asks the leader to promote image:tag into repo, as a
// follower does with a package event: it stamps the request on the
// trigger ConfigMap, which the leader watches (watchTriggers).
func forwardPromotion(ctx context.Context, kube kubernetes.Interface, ns, repo, image, tag string) error {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	req := promoteRequest{Repo: repo, Image: image, Tag: tag, At: now}
	v, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encoding the promote request: %w", err)
	}
	return annotateTrigger(ctx, kube, ns, map[string]string{annotationRequestedAt: now, req.key(): string(v)}, "promotion of "+image+":"+tag)
}

// requestedPromotions lists the promote requests whose annotation differs
// between old and cur. A value that does not decode is skipped: it was not
// written by pinbot.
func requestedPromotions(old, cur map[string]string) []promoteRequest {
	var out []promoteRequest
	for k, v := range cur {
		if !strings.HasPrefix(k, triggerPromotePrefix) || old[k] == v {
			continue
		}
		var p promoteRequest
		if json.Unmarshal([]byte(v), &p) == nil && p.Repo != "" && p.Image != "" && p.Tag != "" {
			out = append(out, p)
		}
	}
	return out
}

// forwardTrigger asks the leader for a pass of app: it stamps app's
// annotation on the trigger ConfigMap (creating it when missing), which
// the leader watches (watchTriggers).
func forwardTrigger(ctx context.Context, kube kubernetes.Interface, ns, app string) error {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	return annotateTrigger(ctx, kube, ns, map[string]string{annotationRequestedAt: now, triggerAppPrefix + app: now}, "app "+app)
}

// annotateTrigger merges ann into the trigger ConfigMap's annotations,
// creating it when missing; what names the request in the error.
func annotateTrigger(ctx context.Context, kube kubernetes.Interface, ns string, ann map[string]string, what string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err != nil {
		return fmt.Errorf("encoding the trigger patch: %w", err)
	}
	cms := kube.CoreV1().ConfigMaps(ns)
	_, err = cms.Patch(ctx, triggerName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "pinbot"})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: triggerName, Namespace: ns, Annotations: ann}},
			metav1.CreateOptions{FieldManager: "pinbot"})
		if apierrors.IsAlreadyExists(err) { // another follower created it meanwhile
			_, err = cms.Patch(ctx, triggerName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "pinbot"})
		}
	}
	if err != nil {
		return fmt.Errorf("annotating %s/%s for %s: %w", ns, triggerName, what, err)
	}
	return nil
}

// requestedApps lists the apps whose annotation differs between old and
// cur: the requests forwarded since old was seen.
func requestedApps(old, cur map[string]string) []string {
	var apps []string
	for k, v := range cur {
		app, ok := strings.CutPrefix(k, triggerAppPrefix)
		if ok && app != "" && old[k] != v {
			apps = append(apps, app)
		}
	}
	return apps
}

// watchTriggers watches the trigger ConfigMap until ctx ends and calls
// trigger for each app, and promote for each package event, a follower
// forwarded after the watch started. It returns once the watch's cache
// has synced.
func watchTriggers(ctx context.Context, kube kubernetes.Interface, ns string, trigger func(app string), promote func(promoteRequest)) error {
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", triggerName).String()
		}))
	inf := f.Core().V1().ConfigMaps().Informer()
	var synced bool
	fire := func(old, cur map[string]string) {
		for _, app := range requestedApps(old, cur) {
			logctx.From(ctx).Debug("forwarded trigger", "app", app)
			trigger(app)
		}
		for _, p := range requestedPromotions(old, cur) {
			logctx.From(ctx).Debug("forwarded promotion", "repo", p.Repo, "image", p.Image, "tag", p.Tag)
			promote(p)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if cm, ok := obj.(*corev1.ConfigMap); ok && synced {
				fire(nil, cm.Annotations)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.ConfigMap)
			n, ok2 := newObj.(*corev1.ConfigMap)
			if ok1 && ok2 {
				fire(o.Annotations, n.Annotations)
			}
		},
	}); err != nil {
		return fmt.Errorf("watching %s/%s: %w", ns, triggerName, err)
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("watching %s/%s: %w", ns, triggerName, context.Cause(ctx))
	}
	synced = true
	return nil
}

// Refresh asks a running pinbot serve (its leader) for a pass of app now,
// through the trigger ConfigMap in the state namespace ns: what `pinbot
// refresh` does, as `flux reconcile` asks a controller.
func Refresh(ctx context.Context, kube kubernetes.Interface, ns, app string) error {
	return forwardTrigger(ctx, kube, ns, app)
}
