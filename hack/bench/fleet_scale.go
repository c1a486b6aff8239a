package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"time"
)

// scaleOut runs the same fleet over twice the replicas and shards, after
// the hostile minute, and compares the largest replica's idle RSS with
// the one the start measured: a replica holds its shards' namespaces, so
// twice the replicas must each hold at most 60% of it.
func (b *fleetBench) scaleOut(ctx context.Context, r *report) error {
	for _, c := range b.replicas {
		c.stop()
		keepLog(c.log, b.shape.name+"-"+c.name+"-before-scale-out.log")
	}
	was := b.shape
	b.shape.replicas, b.shape.shards = 2*was.replicas, 2*was.shards
	b.replicas, b.addrs, b.pprofs = nil, nil, nil
	if err := b.startReplicas(); err != nil {
		return err
	}
	at := fmt.Sprintf("%s apps, %d clusters, %d replicas: ", thousands(b.shape.apps), b.shape.clusters, b.shape.replicas)
	// The hostile minute's apps stay unproven: their Pods run another
	// digest than Git pins.
	want := b.shape.apps - fleetHostileApps
	var proven int
	took, err := benchPoll(ctx, b.shape.patience(20*time.Minute), "every app but the hostile minute's verified over twice the replicas", func() bool {
		all := map[string]bool{}
		for _, addr := range b.addrs {
			maps.Copy(all, verifiedOn(addr))
		}
		if proven = len(all); proven < want {
			time.Sleep(time.Second)
		}
		return proven >= want
	})
	if err != nil {
		return fmt.Errorf("%s of %s apps verified over %d replicas: %w", thousands(proven), thousands(want), b.shape.replicas, err)
	}
	fmt.Printf("   %s apps verified over %d replicas in %v\n", thousands(proven), b.shape.replicas, recRound(took))
	if err := recSleep(ctx, scaleSettle, b.replicas...); err != nil {
		return err
	}
	worst, largest, err := b.idleRSS()
	if err != nil {
		return err
	}
	// What the largest holds: with uneven shares, it may pass few apps.
	if err := saveHeap(b.pprofs[largest], filepath.Join("hack", "bench", "out", b.shape.name+"-scale-out-largest-heap.pprof")); err != nil {
		fmt.Printf("   no heap profile of %s: %s\n", b.replicas[largest].name, err)
	}
	ratio := float64(worst) / float64(b.idleWorst)
	r.check(at+"idle RSS, the largest replica, against "+fmt.Sprint(was.replicas)+" replicas' "+mb(b.idleWorst),
		fmt.Sprintf("%s (%.2fx)", mb(worst), ratio), "≤ 0.60x", ratio <= 0.6)
	return nil
}
