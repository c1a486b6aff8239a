package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// large times cold promotions into a repository of largeFiles files
// against the cold hand floor on the same repository.
func (b *promoteBench) large(ctx context.Context, r *report) error {
	l := &promoteBench{srv: b.srv, bin: b.bin, tmp: filepath.Join(b.tmp, "large"), owner: b.owner, repo: "manifests-20k",
		env: b.env, files: largeFiles, forgeArgs: b.forgeArgs, pushOpts: b.pushOpts}
	if err := os.MkdirAll(l.tmp, 0o755); err != nil {
		return err
	}
	started := time.Now()
	if err := l.setUp(ctx); err != nil {
		return err
	}
	fmt.Printf("   large repository: %d files, %d pins; set up in %v\n", largeFiles, promotePins, time.Since(started).Round(time.Second))
	hand, err := newHandFloor(ctx, l)
	if err != nil {
		return err
	}
	l.hand = hand
	var took, floor []time.Duration
	var rss int64
	for i := range largeColdRuns {
		d, err := l.pushMain()
		if err != nil {
			return err
		}
		_, t, peak, err := l.promoteOnce(ctx, d, i, "--cache-dir=")
		if err != nil {
			return err
		}
		h, err := l.hand.promote(ctx, l.digests[0], d, true)
		if err != nil {
			return err
		}
		took, floor, rss = append(took, t), append(floor, h), max(rss, peak)
	}
	p50, f50 := promoteMedian(took), promoteMedian(floor)
	fmt.Printf("   promote of the %d-file repository without a cache (%d runs): p50 %v; hand floor with git clone --depth 1: p50 %v; peak RSS %s\n",
		largeFiles, largeColdRuns, promoteRound(p50), promoteRound(f50), mb(rss))
	r.check("promote p50, no cache, 20,000 files", fmt.Sprintf("%v (%s of hand %v)", promoteRound(p50), ratio(p50, f50), promoteRound(f50)),
		"<= 0.8x", float64(p50) <= 0.8*float64(f50))
	r.check("promote peak RSS, 20,000 files", mb(rss), "reported", true)
	return l.restoreMain()
}
