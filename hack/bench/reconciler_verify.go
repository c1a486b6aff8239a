package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"pinbot.dev/pinbot/reconciler/lookup"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// The verification measurement: an app of one Deployment of fleetPods
// real Pods on the simulated node.
const (
	fleetApp   = "fleet"
	fleetPods  = 1000
	verifyRuns = 5
	pureRuns   = 20
)

// verify measures verification two ways. End to end, Reconciler.Verify
// (fetch, render, read the cluster, verify from the Pod caches) on a live
// app of fleetPods Pods, against a plain client-go LIST of those Pods.
// Pure, Needs and Verify over a Snapshot of the same live objects,
// against a naive loop comparing each container's imageID with the
// pinned digest.
func (b *recBench) verify(ctx context.Context, r *report) error {
	if err := b.namespaces(ctx, fleetApp); err != nil {
		return err
	}
	if err := b.gitea.CreateRepo(ctx, b.owner, fleetApp, "main"); err != nil {
		return err
	}
	images, err := b.pushImages("fleet-app", 1)
	if err != nil {
		return err
	}
	files := map[string]string{"app/deploy.yaml": recDeployment("web", fleetPods, images[0])}
	if _, err := b.push(ctx, fleetApp, files); err != nil {
		return err
	}
	rc, _, err := b.open("fleet.yaml", time.Minute, recApp{name: fleetApp})
	if err != nil {
		return err
	}
	defer rc.Close()

	began := time.Now()
	st, _, err := rc.Sync(ctx, fleetApp, 5*time.Minute)
	if err != nil {
		return err
	}
	if !st.Verified {
		return fmt.Errorf("the %d-Pod app is not verified after its sync: %s %s: %s", fleetPods, st.Sync, st.Health, st.Verification)
	}
	fmt.Printf("   sync to Verified of a %d-Pod Deployment: %v (untimed set-up)\n", fleetPods, recRound(time.Since(began)))

	var e2e, lists []time.Duration
	for range verifyRuns {
		began := time.Now()
		v, err := rc.Verify(ctx, fleetApp)
		if err != nil {
			return err
		}
		e2e = append(e2e, time.Since(began))
		if !v.Verified || len(v.Containers) != fleetPods {
			return fmt.Errorf("verify: verified %t with %d containers, want %d", v.Verified, len(v.Containers), fleetPods)
		}
		began = time.Now()
		pods, err := b.kube.CoreV1().Pods(fleetApp).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		lists = append(lists, time.Since(began))
		if len(pods.Items) != fleetPods {
			return fmt.Errorf("%d Pods listed, want %d", len(pods.Items), fleetPods)
		}
	}
	e, l := recMedian(e2e), recMedian(lists)
	fmt.Printf("   Reconciler.Verify end to end, %d live Pods: median %-8v runs %s\n", fleetPods, recRound(e), recDurations(e2e))
	fmt.Printf("     baseline client-go LIST of the %d Pods:     median %-8v runs %s\n", fleetPods, recRound(l), recDurations(lists))
	r.check(fmt.Sprintf("verify end to end, %d live Pods", fleetPods), fmt.Sprintf("%v (%s of a Pod LIST)", recRound(e), ratio(e, l)), "<= 1s", e <= time.Second)

	snap, digest, err := b.snapshot(ctx, files)
	if err != nil {
		return err
	}
	var pure, naive []time.Duration
	for range pureRuns {
		began := time.Now()
		_ = verdict.Needs(snap)
		v := verdict.Verify(fleetApp, "bench", snap)
		pure = append(pure, time.Since(began))
		if !v.Verified || len(v.Containers) != fleetPods {
			return fmt.Errorf("pure verify: verified %t with %d containers, want %d: %v", v.Verified, len(v.Containers), fleetPods, v.Reasons)
		}
		began = time.Now()
		n := 0
		for _, p := range snap.Pods {
			for _, c := range p.Status.ContainerStatuses {
				if strings.HasSuffix(c.ImageID, "@"+digest) {
					n++
				}
			}
		}
		naive = append(naive, time.Since(began))
		if n != fleetPods {
			return fmt.Errorf("naive check: %d of %d containers match", n, fleetPods)
		}
	}
	p, nv := recMedian(pure), recMedian(naive)
	fmt.Printf("   Needs + Verify over a Snapshot of the %d Pods: median %-8v (%d runs)\n", fleetPods, recRound(p), pureRuns)
	fmt.Printf("     baseline imageID suffix check of each container: median %v\n", recRound(nv))
	r.check(fmt.Sprintf("verify over %d Pods (pure, Snapshot)", fleetPods), fmt.Sprintf("%v (%s of naive check)", recRound(p), ratio(p, nv)), "<= 1s", p <= time.Second)
	return nil
}

// snapshot builds the Snapshot a pass verifies from the live fleet app:
// Git's Deployment, the live Deployment, ReplicaSets, Pods and Nodes as
// the API returns them, and the registry answers verification needs. It
// returns the pinned digest too.
func (b *recBench) snapshot(ctx context.Context, files map[string]string) (*verdict.Snapshot, string, error) {
	desired, err := recDecode(files, fleetApp)
	if err != nil {
		return nil, "", err
	}
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	live, err := b.dyn.Resource(gvr).Namespace(fleetApp).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		return nil, "", err
	}
	s := &verdict.Snapshot{Desired: desired, Live: map[object.Ref]*unstructured.Unstructured{object.RefOf(live): live}}
	rss, err := b.kube.AppsV1().ReplicaSets(fleetApp).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", err
	}
	for i := range rss.Items {
		s.ReplicaSets = append(s.ReplicaSets, &rss.Items[i])
	}
	nodes, err := b.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", err
	}
	for i := range nodes.Items {
		s.Nodes = append(s.Nodes, &nodes.Items[i])
	}
	pods, err := b.kube.CoreV1().Pods(fleetApp).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", err
	}
	if len(pods.Items) != fleetPods {
		return nil, "", fmt.Errorf("%d live Pods, want %d", len(pods.Items), fleetPods)
	}
	for i := range pods.Items {
		s.Pods = append(s.Pods, &pods.Items[i])
	}
	s.Lookups = verdict.Lookups{}
	for _, l := range verdict.Needs(s) {
		s.Lookups[l] = lookup.Answer(ctx, b.reg, l)
	}
	image := pods.Items[0].Spec.Containers[0].Image
	_, digest, ok := strings.Cut(image, "@")
	if !ok {
		return nil, "", fmt.Errorf("image %s is not pinned", image)
	}
	return s, digest, nil
}
