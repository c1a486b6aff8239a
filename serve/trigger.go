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
	// triggerPushPrefix prefixes one annotation per repository and
	// branch, holding a forwarded push (pushRequest as JSON): one write
	// however many apps follow the branch, so a repository of thousands
	// of apps neither costs a write per app nor outgrows the 256 KiB the
	// API server allows a ConfigMap's annotations.
	triggerPushPrefix = "push.pinbot.dev/"
)

// pushRequest is a push a replica forwards to the others: each passes the
// apps it holds that follow Branch of the repository at URLs.
type pushRequest struct {
	Branch string   `json:"branch"`
	URLs   []string `json:"urls"`
	// At tells two pushes apart, so each is forwarded.
	At string `json:"at"`
	// From is the replica that forwarded it, which passed its own apps
	// already.
	From string `json:"from,omitempty"`
}

// key is the request's annotation key: one per repository and branch.
func (p pushRequest) key() string {
	h := sha256.Sum256([]byte(p.Branch + " " + strings.Join(p.URLs, " ")))
	return triggerPushPrefix + hex.EncodeToString(h[:8])
}

// forwardPush stamps a push of branch of the repository at urls on the
// trigger ConfigMap, which every replica watches (watchTriggers).
func forwardPush(ctx context.Context, kube kubernetes.Interface, ns, from, branch string, urls []string) error {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	p := pushRequest{Branch: branch, URLs: urls, At: now, From: from}
	v, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encoding the push: %w", err)
	}
	return annotateTrigger(ctx, kube, ns, map[string]string{annotationRequestedAt: now, p.key(): string(v)}, "a push of "+branch)
}

// requestedPushes lists the pushes whose annotation differs between old
// and cur; a value that does not decode was not written by pinbot.
func requestedPushes(old, cur map[string]string) []pushRequest {
	return requested(old, cur, triggerPushPrefix, func(p pushRequest) bool { return p.Branch != "" && len(p.URLs) > 0 })
}

// triggerHandlers are what watchTriggers calls for each forwarded
// request: a pass of one app, a package event, and a push.
type triggerHandlers struct {
	app     func(app string)
	promote func(promoteRequest)
	push    func(pushRequest)
}

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
	return requested(old, cur, triggerPromotePrefix, func(p promoteRequest) bool { return p.Repo != "" && p.Image != "" && p.Tag != "" })
}

// requested decodes the annotations under prefix whose value differs
// between old and cur: the requests forwarded since old was seen. A value
// that does not decode, or that valid refuses, was not written by pinbot.
func requested[T any](old, cur map[string]string, prefix string, valid func(T) bool) []T {
	var out []T
	for k, v := range cur {
		if !strings.HasPrefix(k, prefix) || old[k] == v {
			continue
		}
		var r T
		if json.Unmarshal([]byte(v), &r) == nil && valid(r) {
			out = append(out, r)
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

// watchTriggers watches the trigger ConfigMap until ctx ends and calls h
// for each request another replica forwarded after the watch started: an
// app's pass, a package event, a push. A nil handler skips its requests.
// It returns once the watch's cache has synced.
func watchTriggers(ctx context.Context, kube kubernetes.Interface, ns string, h triggerHandlers) error {
	f := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", triggerName).String()
		}))
	inf := f.Core().V1().ConfigMaps().Informer()
	var synced bool
	fire := func(old, cur map[string]string) {
		log := logctx.From(ctx)
		for _, app := range requestedApps(old, cur) {
			if h.app != nil {
				log.Debug("forwarded trigger", "app", app)
				h.app(app)
			}
		}
		for _, p := range requestedPromotions(old, cur) {
			if h.promote != nil {
				log.Debug("forwarded promotion", "repo", p.Repo, "image", p.Image, "tag", p.Tag)
				h.promote(p)
			}
		}
		for _, p := range requestedPushes(old, cur) {
			if h.push != nil {
				log.Debug("forwarded push", "branch", p.Branch, "urls", p.URLs)
				h.push(p)
			}
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

// triggerFollowing answers a push of branch of the repository at urls,
// which apps follow: this replica passes those of its apps the push
// changed (Reconciler.TriggerChanged), and forwards the push once for the
// others, which the replicas passing them answer alike (triggerPushed).
// It returns the apps it passes and those it forwarded; a forward that
// fails leaves the latter out.
//
// Pushes of one branch share their answers (coalesce.Fresh): each is
// answered by a fetch that began after it arrived, and a storm of them
// costs a fetch or two, not one each.
func (d *daemon) triggerFollowing(ctx context.Context, branch string, urls, apps []string) ([]string, error) {
	return d.pushes.Do(ctx, pushKey("webhook", branch, urls), func(ctx context.Context) ([]string, error) {
		return d.followPush(ctx, branch, urls, apps)
	})
}

// pushKey names the pushes of branch of the repository at urls, for one
// path (a webhook, or a push another replica forwarded).
func pushKey(path, branch string, urls []string) string {
	return path + "\n" + branch + "\n" + strings.Join(urls, "\n")
}

// followPush is triggerFollowing's work.
func (d *daemon) followPush(ctx context.Context, branch string, urls, apps []string) ([]string, error) {
	var here, away []string
	for _, app := range apps {
		if d.passesHere(app) {
			here = append(here, app)
		} else {
			away = append(away, app)
		}
	}
	passed := d.passChanged(ctx, here)
	if len(away) == 0 {
		return passed, nil
	}
	if err := forwardPush(ctx, d.kube, d.ns, d.o.Lease.ID, branch, urls); err != nil {
		return passed, err
	}
	return append(passed, away...), nil
}

// triggerPushed passes the apps this replica holds that a push another
// replica forwarded changed; forwarded pushes of one branch share their
// answers, as webhooks do.
func (d *daemon) triggerPushed(ctx context.Context, p pushRequest) {
	if p.From != "" && p.From == d.o.Lease.ID {
		return // this replica forwarded it, having passed its own apps
	}
	_, _ = d.pushes.Do(ctx, pushKey("forwarded", p.Branch, p.URLs), func(ctx context.Context) ([]string, error) {
		var here []string
		for _, app := range d.r.Following(p.Branch, p.URLs...) {
			if d.passesHere(app) {
				here = append(here, app)
			}
		}
		return d.passChanged(ctx, here), nil
	})
}

// passChanged passes the apps a push changed, of here (this replica's),
// counting them and the others; it returns the apps passed.
func (d *daemon) passChanged(ctx context.Context, here []string) []string {
	if len(here) == 0 {
		return []string{}
	}
	passed := d.r.TriggerChanged(ctx, here)
	d.pushApps.WithLabelValues("passed").Add(float64(len(passed)))
	d.pushApps.WithLabelValues("unchanged").Add(float64(len(here) - len(passed)))
	return passed
}
