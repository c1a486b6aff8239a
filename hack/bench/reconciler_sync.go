package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/status"
)

// The 500-object app: ConfigMaps and a few one-replica Deployments.
const (
	manyApp         = "many"
	manyBaseNS      = "many-base"
	manyObjects     = 500
	manyDeployments = 5
	driftRuns       = 3
)

// manyObjects measures Reconciler.Sync (what `pinbot sync` runs) of an
// app of 500 objects, first creating them and then re-applying them
// unchanged, against a naive sequential client-go server-side apply of
// the same objects (same client rate limits as pinbot: 100 QPS, burst
// 200) into a twin namespace. Then it measures drift detection on the
// same app.
func (b *recBench) manyObjects(ctx context.Context, r *report) error {
	if err := b.namespaces(ctx, manyApp, manyBaseNS); err != nil {
		return err
	}
	if err := b.gitea.CreateRepo(ctx, b.owner, manyApp, "main"); err != nil {
		return err
	}
	images, err := b.pushImages("many-app", 1)
	if err != nil {
		return err
	}
	files := map[string]string{}
	for i := range manyObjects - manyDeployments {
		files[fmt.Sprintf("app/config/cm-%03d.yaml", i)] = recConfigMap(fmt.Sprintf("cm-%03d", i), i)
	}
	for i := range manyDeployments {
		files[fmt.Sprintf("app/deploy-%d.yaml", i)] = recDeployment(fmt.Sprintf("svc-%d", i), 1, images[0])
	}
	if _, err := b.push(ctx, manyApp, files); err != nil {
		return err
	}
	objs, err := recDecode(files, manyBaseNS)
	if err != nil {
		return err
	}
	rc, file, err := b.open("many.yaml", time.Minute, recApp{name: manyApp})
	if err != nil {
		return err
	}
	defer rc.Close()
	naive, err := b.naiveApplier()
	if err != nil {
		return err
	}

	syncOnce := func() (time.Duration, error) {
		began := time.Now()
		st, _, err := rc.Sync(ctx, manyApp, 0)
		took := time.Since(began)
		if err != nil {
			return took, err
		}
		if st.Sync != status.Synced {
			return took, fmt.Errorf("after the sync: %s %v %s", st.Sync, st.OutOfSync, st.Error)
		}
		return took, nil
	}
	cold, err := syncOnce()
	if err != nil {
		return fmt.Errorf("first sync: %w", err)
	}
	coldBase, err := naive.apply(ctx, objs, false)
	if err != nil {
		return err
	}
	warm, err := syncOnce()
	if err != nil {
		return fmt.Errorf("second sync: %w", err)
	}
	warmBase, err := naive.apply(ctx, objs, false)
	if err != nil {
		return err
	}
	inv, err := b.kube.CoreV1().ConfigMaps(manyApp).List(ctx, metav1.ListOptions{LabelSelector: object.LabelApp + "=" + manyApp})
	if err != nil {
		return err
	}
	if len(inv.Items) != manyObjects-manyDeployments {
		return fmt.Errorf("%d ConfigMaps carry the inventory label after the sync, want %d", len(inv.Items), manyObjects-manyDeployments)
	}
	fmt.Printf("   sync of %d objects (%d ConfigMaps, %d Deployments), Reconciler.Sync:\n", manyObjects, manyObjects-manyDeployments, manyDeployments)
	fmt.Printf("     first (clone, render, create all): %-8v baseline sequential client-go SSA creating them: %v (%s)\n",
		recRound(cold), recRound(coldBase), ratio(cold, coldBase))
	fmt.Printf("     again (fetch, render, all unchanged): %-8v baseline the same SSA loop again: %v (%s)\n",
		recRound(warm), recRound(warmBase), ratio(warm, warmBase))
	r.check("sync of 500 objects (first)", fmt.Sprintf("%v (%s of naive SSA)", recRound(cold), ratio(cold, coldBase)), "<= 10s", cold <= 10*time.Second)
	r.check("sync of 500 objects (unchanged)", fmt.Sprintf("%v (%s of naive SSA)", recRound(warm), ratio(warm, warmBase)), "<= 10s", warm <= 10*time.Second)
	if err := b.historyPerSync(ctx, r, file); err != nil {
		return err
	}
	return b.drift(ctx, r, file, naive, objs)
}

// historyPerSync syncs the 500-object app once more, on a Reconciler of
// its own whose every request passes through the counting proxy, and
// counts the requests for the app's history ConfigMap. A sync pass reads
// the record once and writes it once.
func (b *recBench) historyPerSync(ctx context.Context, r *report, file string) error {
	proxy, counter, err := b.countingProxy()
	if err != nil {
		return err
	}
	defer proxy.Close()
	cfg, err := config.Load(file)
	if err != nil {
		return err
	}
	rc, err := reconciler.New(cfg, proxyConfig(proxy), reconciler.WithRegistry(b.reg), reconciler.WithCacheDir(filepath.Join(b.tmp, "cache-many")))
	if err != nil {
		return err
	}
	defer rc.Close()
	st, _, err := rc.Sync(ctx, manyApp, 0)
	if err != nil {
		return fmt.Errorf("sync through the counting proxy: %w", err)
	}
	if st.Sync != status.Synced {
		return fmt.Errorf("after the sync through the counting proxy: %s %v %s", st.Sync, st.OutOfSync, st.Error)
	}
	dir := "/api/v1/namespaces/" + cfg.StateNamespace + "/configmaps"
	var gets, writes int
	for _, q := range counter.snapshot() {
		switch {
		case q.path == dir+"/pinbot-app-"+manyApp && q.verb == "GET":
			gets++
		case q.path == dir+"/pinbot-app-"+manyApp && q.verb == "UPDATE", q.path == dir && q.verb == "CREATE":
			writes++
		}
	}
	fmt.Printf("   history ConfigMap requests of one sync pass (Reconciler.Sync through the counting proxy): %d GET, %d PUT (limit 1 GET, 1 PUT)\n", gets, writes)
	r.check("history ConfigMap per sync pass", fmt.Sprintf("%d GET, %d PUT", gets, writes), "<= 1 GET, 1 PUT", gets <= 1 && writes <= 1)
	return nil
}

// drift measures `pinbot diff` (Reconciler.Diff: a server-side apply
// dry run per object compared on the fields pinbot owns) over the
// 500-object app on a fresh Reconciler: the first pass dry-runs every
// object; later passes reuse each object's diff until it changes, so the
// steady pass and a pass after driftEdits live edits are timed too. The
// baseline is a sequential SSA dry run of the 500 objects.
func (b *recBench) drift(ctx context.Context, r *report, file string, naive *naiveApplier, objs []*unstructured.Unstructured) error {
	rc, err := b.reconcilerCache(file, "many")
	if err != nil {
		return err
	}
	defer rc.Close()
	diff := func(want int) (time.Duration, error) {
		began := time.Now()
		d, err := rc.Diff(ctx, manyApp)
		took := time.Since(began)
		if err != nil {
			return took, err
		}
		if len(d.Fields) != want || len(d.Missing)+len(d.Orphaned) != 0 {
			return took, fmt.Errorf("diff: %d fields out of sync (want %d), %d missing, %d orphaned: %v", len(d.Fields), want, len(d.Missing), len(d.Orphaned), d.Fields)
		}
		return took, nil
	}
	cold, err := diff(0)
	if err != nil {
		return fmt.Errorf("first diff: %w", err)
	}
	var warm []time.Duration
	for range driftRuns {
		d, err := diff(0)
		if err != nil {
			return err
		}
		warm = append(warm, d)
	}
	var dry []time.Duration
	for range driftRuns {
		d, err := naive.apply(ctx, objs, true)
		if err != nil {
			return err
		}
		dry = append(dry, d)
	}
	if err := b.editLive(ctx); err != nil {
		return err
	}
	edited, err := b.diffUntil(ctx, rc, driftEdits)
	if err != nil {
		return err
	}
	steady, floor := recMedian(warm), recMedian(dry)
	fmt.Printf("   drift detection over %d objects, Reconciler.Diff (pinbot diff) on a fresh Reconciler:\n", manyObjects)
	fmt.Printf("     first pass (fetch, render, watch, %d dry runs):  %v\n", manyObjects, recRound(cold))
	fmt.Printf("     steady pass (nothing changed):                   median %-8v runs %s\n", recRound(steady), recDurations(warm))
	fmt.Printf("     pass after %d live edits, all %d reported:        %v\n", driftEdits, driftEdits, recRound(edited))
	fmt.Printf("     baseline sequential SSA dry run of the %d objects: median %-8v runs %s\n", manyObjects, recRound(floor), recDurations(dry))
	r.check("drift diff over 500 objects, first pass", fmt.Sprintf("%v (%s of SSA dry-run loop)", recRound(cold), ratio(cold, floor)), "<= 5s", cold <= 5*time.Second)
	r.check("drift diff over 500 objects, steady pass", fmt.Sprintf("%v (%s)", recRound(steady), ratio(steady, floor)), "<= 5s", steady <= 5*time.Second)
	r.check(fmt.Sprintf("drift diff, %d live edits found", driftEdits), fmt.Sprintf("%v (%s)", recRound(edited), ratio(edited, floor)), "<= 5s", edited <= 5*time.Second)
	return nil
}

// driftEdits is how many fields editLive changes on the cluster.
const driftEdits = 10

// editLive changes, behind pinbot's back, a field Git sets on each of
// driftEdits ConfigMaps (as kubectl edit would).
func (b *recBench) editLive(ctx context.Context) error {
	cms := b.kube.CoreV1().ConfigMaps(manyApp)
	for i := range driftEdits {
		cm, err := cms.Get(ctx, fmt.Sprintf("cm-%03d", i*10), metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data["LOG_LEVEL"] = "debug"
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
			return fmt.Errorf("editing %s: %w", cm.Name, err)
		}
	}
	return nil
}

// diffUntil calls Diff until it reports want fields out of sync (the
// Reconciler's watch may not have delivered the edits yet) and returns
// the duration of that call.
func (b *recBench) diffUntil(ctx context.Context, rc *reconciler.Reconciler, want int) (time.Duration, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		began := time.Now()
		d, err := rc.Diff(ctx, manyApp)
		took := time.Since(began)
		if err != nil {
			return took, err
		}
		if len(d.Fields) == want {
			return took, nil
		}
		if time.Now().After(deadline) {
			return took, fmt.Errorf("diff after %d live edits reports %d fields out of sync: %v", want, len(d.Fields), d.Fields)
		}
		select {
		case <-ctx.Done():
			return took, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// recDecode decodes the YAML files into objects in namespace ns.
func recDecode(files map[string]string, ns string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for name, body := range files {
		u := &unstructured.Unstructured{}
		if err := yaml.NewYAMLOrJSONDecoder(strings.NewReader(body), 4096).Decode(&u.Object); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", name, err)
		}
		u.SetNamespace(ns)
		out = append(out, u)
	}
	return out, nil
}

// naiveApplier server-side applies objects one after the other with a
// dynamic client: the baseline.
type naiveApplier struct {
	config *rest.Config
	mapper meta.RESTMapper
}

func (b *recBench) naiveApplier() (*naiveApplier, error) {
	rc := b.cluster.Config()
	rc.QPS, rc.Burst = 100, 200 // as pinbot's Reconciler
	disc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &naiveApplier{config: rc, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
}

// apply applies objs in order (a dry run when dryRun) and returns how long
// it took. Each run has a new client, so its rate limiter starts with a
// full burst whatever ran before.
func (a *naiveApplier) apply(ctx context.Context, objs []*unstructured.Unstructured, dryRun bool) (time.Duration, error) {
	dyn, err := dynamic.NewForConfig(a.config)
	if err != nil {
		return 0, err
	}
	opts := metav1.ApplyOptions{FieldManager: "bench", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	began := time.Now()
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return 0, fmt.Errorf("mapping %s: %w", gvk, err)
		}
		if _, err := dyn.Resource(m.Resource).Namespace(o.GetNamespace()).Apply(ctx, o.GetName(), o, opts); err != nil {
			return 0, fmt.Errorf("applying %s %s: %w", gvk.Kind, o.GetName(), err)
		}
	}
	return time.Since(began), nil
}
