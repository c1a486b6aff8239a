package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/serve/proofs"
)

// The merge-to-Verified measurement: an app of one Deployment of
// rolloutReplicas Pods (and a ConfigMap), automated, whose image changes
// rolloutRuns times; and its twin outside pinbot, changed the same way by
// a plain client-go update.
const (
	rolloutApp      = "rollout"
	rolloutBaseNS   = "rollout-base"
	rolloutRuns     = 5
	rolloutReplicas = 3
	rolloutTimeout  = 3 * time.Minute
)

// recRollout is the timeline of one image change, each instant as seen on
// the API (watch events) or by the bench.
type recRollout struct {
	start    time.Time // the push to Git returned (pinbot), or the Update call began (baseline)
	applied  time.Time // the Deployment first showed the new image
	complete time.Time // the rollout completed (see rolledOut)
	verified time.Time // pinbot's history recorded the commit Verified
	proven   time.Time // the app's Proof said Ready for the commit
}

func (t recRollout) rollout() time.Duration { return t.complete.Sub(t.applied) }
func (t recRollout) total() time.Duration   { return t.verified.Sub(t.start) }

// rollout measures merge-to-Verified with the reconciler loop running in
// this process, each merge (a push of the new commit) followed by
// Reconciler.Trigger, as a webhook would. Overhead is the total from the
// push to the Verified record minus the rollout itself, which is timed
// from the moment the API first holds the new Deployment template to the
// rollout's completion. The baseline is the same change on a twin
// Deployment by client-go, timed from the Update call to completion.
func (b *recBench) rollout(ctx context.Context, r *report) error {
	if err := b.namespaces(ctx, rolloutApp, rolloutBaseNS); err != nil {
		return err
	}
	if err := b.gitea.CreateRepo(ctx, b.owner, rolloutApp, "main"); err != nil {
		return err
	}
	images, err := b.pushImages("rollout-app", 2*(rolloutRuns+1))
	if err != nil {
		return err
	}
	pinbotImages, baseImages := images[:rolloutRuns+1], images[rolloutRuns+1:]
	rc, _, err := b.open("rollout.yaml", time.Minute, recApp{name: rolloutApp, automated: true})
	if err != nil {
		return err
	}
	defer rc.Close()
	runCtx, cancel := context.WithCancel(ctx)
	proofWrites, err := b.publishProofs(runCtx, rc)
	if err != nil {
		cancel()
		return err
	}
	ran := make(chan error, 1)
	running := false
	defer func() {
		cancel()
		if !running {
			return
		}
		if err := <-ran; err != nil {
			fmt.Printf("   the reconciler loop: %s\n", err)
		}
	}()

	// First sync (untimed): clone, create, roll out, verify.
	if _, err := b.pinbotRun(ctx, pinbotImages[0], func() error {
		running = true
		go func() { ran <- rc.RunUntil(runCtx, runCtx.Done()) }()
		return nil
	}); err != nil {
		return fmt.Errorf("first sync: %w", err)
	}
	if err := b.baselineCreate(ctx, baseImages[0]); err != nil {
		return err
	}

	var pin, base []recRollout
	for i := 1; i <= rolloutRuns; i++ {
		p, err := b.pinbotRun(ctx, pinbotImages[i], func() error { return rc.Trigger(rolloutApp) })
		if err != nil {
			return fmt.Errorf("run %d: %w", i, err)
		}
		bl, err := b.baselineRun(ctx, baseImages[i])
		if err != nil {
			return fmt.Errorf("baseline run %d: %w", i, err)
		}
		pin, base = append(pin, p), append(base, bl)
	}

	var totals, rollouts, overheads, before, after, alone, toProof []time.Duration
	for i := range pin {
		toProof = append(toProof, pin[i].proven.Sub(pin[i].complete))
		totals = append(totals, pin[i].total())
		rollouts = append(rollouts, pin[i].rollout())
		overheads = append(overheads, pin[i].total()-pin[i].rollout())
		before = append(before, pin[i].applied.Sub(pin[i].start))
		after = append(after, pin[i].verified.Sub(pin[i].complete))
		alone = append(alone, base[i].complete.Sub(base[i].start))
	}
	total, own, overhead, baseline := recMedian(totals), recMedian(rollouts), recMedian(overheads), recMedian(alone)
	fmt.Printf("   merge to Verified, %d runs of a %d-replica image change, each triggered on demand:\n", rolloutRuns, rolloutReplicas)
	fmt.Printf("     total (push to Verified recorded)      median %-8v runs %s\n", recRound(total), recDurations(totals))
	fmt.Printf("     its rollout (template stored to done)   median %-8v runs %s\n", recRound(own), recDurations(rollouts))
	fmt.Printf("     overhead = total - rollout              median %-8v runs %s\n", recRound(overhead), recDurations(overheads))
	fmt.Printf("       before the apply (fetch, render, compare, report pending, apply)  median %v\n", recRound(recMedian(before)))
	fmt.Printf("       after the rollout (notice, verify, report success, record)        median %v\n", recRound(recMedian(after)))
	fmt.Printf("     baseline: client-go Update to rollout done, median %-8v runs %s\n", recRound(baseline), recDurations(alone))
	r.check("merge→Verified overhead beyond the rollout", fmt.Sprintf("%v (p50 of %d)", recRound(overhead), rolloutRuns), "<= 1s", overhead <= time.Second)
	r.check("merge→Verified total vs rollout alone", fmt.Sprintf("%v = %s, +%v", recRound(total), ratio(total, baseline), recRound(total-baseline)), "reported", true)
	fmt.Printf("     rollout done (last Pod Ready) to its Proof Ready, runs %s\n", recDurations(toProof))
	r.check("last Pod Ready → Proof Ready", fmt.Sprintf("%v (p50 of %d)", recRound(recMedian(toProof)), rolloutRuns), "<= 1s", recMedian(toProof) <= time.Second)
	idle := proofWrites.Load()
	time.Sleep(proofIdle) // a full pass of the loop's interval falls in it
	idle = proofWrites.Load() - idle
	r.check("Proof writes when idle", fmt.Sprintf("%d in %v", idle, proofIdle), "0 a minute", idle == 0)
	return nil
}

// proofIdle is how long the bench counts Proof writes of an app that
// changes nothing: longer than the loop's interval, so a full pass falls
// in it.
const proofIdle = 70 * time.Second

// publishProofs writes the apps' Proofs as serve does (the chart's CRD
// installed first), through a client that counts its writes.
func (b *recBench) publishProofs(ctx context.Context, rc *reconciler.Reconciler) (*atomic.Int64, error) {
	if err := b.cluster.InstallCRDs(ctx, filepath.Join("charts", "pinbot", "crds", "proofs.pinbot.dev.yaml")); err != nil {
		return nil, err
	}
	var writes atomic.Int64
	cfg := rest.CopyConfig(b.cluster.Config())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet && strings.Contains(req.URL.Path, "/proofs") {
				writes.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	pub := proofs.New(dyn, rc)
	rc.OnProofChange(pub.Changed)
	go pub.Run(ctx)
	return &writes, nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// rolloutFiles is the app's tree with image pinned.
func rolloutFiles(image string) map[string]string {
	return map[string]string{
		"app/deploy.yaml": recDeployment("web", rolloutReplicas, image),
		"app/config.yaml": recConfigMap("web-config", 0),
	}
}

// pinbotRun pushes the app with image, calls kick (start the loop, or
// Trigger) and follows the change to its Verified record.
func (b *recBench) pinbotRun(ctx context.Context, image string, kick func() error) (recRollout, error) {
	ctx, cancel := context.WithTimeout(ctx, rolloutTimeout)
	defer cancel()
	var t recRollout
	dep, err := b.watchDeployment(ctx, rolloutApp, image, &t)
	if err != nil {
		return recRollout{}, err
	}
	var want atomic.Pointer[string]
	var last atomic.Pointer[string]
	hist, err := recUntil(ctx, b.configMaps("pinbot-system"), "pinbot-app-"+rolloutApp, func(o runtime.Object, at time.Time) bool {
		var es []history.Entry
		if err := json.Unmarshal([]byte(o.(*corev1.ConfigMap).Data["history.json"]), &es); err != nil || len(es) == 0 {
			return false
		}
		s := fmt.Sprintf("%.12s %s verified %t: %s", es[0].Commit, es[0].Result, es[0].Verified, es[0].Summary)
		last.Store(&s)
		if w := want.Load(); w != nil && es[0].Commit == *w && es[0].Verified {
			t.verified = at
			return true
		}
		return false
	})
	if err != nil {
		return recRollout{}, err
	}
	res := b.dyn.Resource(proofs.GVR).Namespace(rolloutApp)
	proof, err := recUntil(ctx, recLister{func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return res.List(ctx, o) }, res.Watch},
		rolloutApp, func(o runtime.Object, at time.Time) bool {
			u := o.(*unstructured.Unstructured)
			commit, _, _ := unstructured.NestedString(u.Object, "status", "commit")
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			w := want.Load()
			for _, c := range conds {
				if m, _ := c.(map[string]any); w != nil && commit == *w && m["type"] == "Ready" && m["status"] == "True" {
					t.proven = at
					return true
				}
			}
			return false
		})
	if err != nil {
		return recRollout{}, err
	}
	// On failure the watches may still be running: return no timeline.
	sha, err := b.push(ctx, rolloutApp, rolloutFiles(image))
	if err != nil {
		return recRollout{}, err
	}
	t.start = time.Now()
	want.Store(&sha)
	if err := kick(); err != nil {
		return recRollout{}, err
	}
	if err := <-dep; err != nil {
		return recRollout{}, fmt.Errorf("following the rollout of %.12s: %w", sha, err)
	}
	if err := <-hist; err != nil {
		l := "nothing recorded"
		if s := last.Load(); s != nil {
			l = *s
		}
		return recRollout{}, fmt.Errorf("waiting for %.12s to be Verified (last history entry: %s): %w", sha, l, err)
	}
	if err := <-proof; err != nil {
		return recRollout{}, fmt.Errorf("waiting for the Proof of %.12s: %w", sha, err)
	}
	return t, nil
}

// baselineCreate creates the twin Deployment with image and waits for it.
func (b *recBench) baselineCreate(ctx context.Context, image string) error {
	ctx, cancel := context.WithTimeout(ctx, rolloutTimeout)
	defer cancel()
	var d appsv1.Deployment
	if err := yaml.NewYAMLOrJSONDecoder(strings.NewReader(recDeployment("web", rolloutReplicas, image)), 4096).Decode(&d); err != nil {
		return err
	}
	d.Namespace = rolloutBaseNS
	var t recRollout
	done, err := b.watchDeployment(ctx, rolloutBaseNS, image, &t)
	if err != nil {
		return err
	}
	if _, err := b.kube.AppsV1().Deployments(rolloutBaseNS).Create(ctx, &d, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the baseline Deployment: %w", err)
	}
	return <-done
}

// baselineRun changes the twin Deployment's image with a client-go Update
// and waits until the rollout completes.
func (b *recBench) baselineRun(ctx context.Context, image string) (recRollout, error) {
	ctx, cancel := context.WithTimeout(ctx, rolloutTimeout)
	defer cancel()
	var t recRollout
	done, err := b.watchDeployment(ctx, rolloutBaseNS, image, &t)
	if err != nil {
		return recRollout{}, err
	}
	deps := b.kube.AppsV1().Deployments(rolloutBaseNS)
	d, err := deps.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return recRollout{}, err
	}
	d.Spec.Template.Spec.Containers[0].Image = image
	t.start = time.Now()
	if _, err := deps.Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		return recRollout{}, fmt.Errorf("updating the baseline Deployment: %w", err)
	}
	if err := <-done; err != nil {
		return recRollout{}, fmt.Errorf("following the baseline rollout: %w", err)
	}
	return t, nil
}

// watchDeployment follows Deployment "web" in ns: it sets t.applied when
// the API first shows image in its template and t.complete when that
// rollout completes.
func (b *recBench) watchDeployment(ctx context.Context, ns, image string, t *recRollout) (<-chan error, error) {
	return recUntil(ctx, b.deployments(ns), "web", func(o runtime.Object, at time.Time) bool {
		d := o.(*appsv1.Deployment)
		if t.applied.IsZero() && d.Spec.Template.Spec.Containers[0].Image == image {
			t.applied = at
		}
		if !t.applied.IsZero() && rolledOut(d) {
			t.complete = at
			return true
		}
		return false
	})
}

// rolledOut is a completed rollout as `kubectl rollout status` and kstatus
// (pinbot's health) judge it: the controller observed the current
// generation, every replica is updated, ready and available, no old
// replica remains, and the new ReplicaSet is reported available.
func rolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != want || s.Replicas != want ||
		s.ReadyReplicas != want || s.AvailableReplicas != want {
		return false
	}
	available, progressed := false, false
	for _, c := range s.Conditions {
		switch {
		case c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue:
			available = true
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionTrue && c.Reason == "NewReplicaSetAvailable":
			progressed = true
		}
	}
	return available && progressed
}

// recLister lists and watches one kind in one namespace.
type recLister struct {
	list  func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
}

func (b *recBench) deployments(ns string) recLister {
	c := b.kube.AppsV1().Deployments(ns)
	return recLister{func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return c.List(ctx, o) }, c.Watch}
}

func (b *recBench) configMaps(ns string) recLister {
	c := b.kube.CoreV1().ConfigMaps(ns)
	return recLister{func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return c.List(ctx, o) }, c.Watch}
}

// recUntil lists the object called name and starts a watch from that
// list before it returns, so no later change is missed. In the
// background it calls match with the listed object and then each new
// version, with the time it was seen, until match returns true (nil on
// the channel), ctx ends or the watch fails.
func recUntil(ctx context.Context, l recLister, name string, match func(runtime.Object, time.Time) bool) (<-chan error, error) {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	list, err := l.list(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", name, err)
	}
	acc, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	w, err := l.watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: acc.GetResourceVersion()})
	if err != nil {
		return nil, fmt.Errorf("watching %s: %w", name, err)
	}
	done := make(chan error, 1)
	go func() {
		defer w.Stop()
		now := time.Now()
		for _, it := range items {
			if match(it, now) {
				done <- nil
				return
			}
		}
		for {
			select {
			case <-ctx.Done():
				done <- context.Cause(ctx)
				return
			case ev, ok := <-w.ResultChan():
				switch {
				case !ok:
					done <- errors.New("the watch closed")
					return
				case ev.Type == watch.Error:
					done <- apierrors.FromObject(ev.Object)
					return
				case ev.Type == watch.Added || ev.Type == watch.Modified:
					if match(ev.Object, time.Now()) {
						done <- nil
						return
					}
				}
			}
		}
	}()
	return done, nil
}
