package main

import (
	"context"
	"fmt"
	"maps"
	"time"
)

// restart stops every replica with SIGTERM, as a rolling upgrade's
// last step leaves none of the old, starts them all again on the stored
// records, and times until every app is verified again. A replica
// reports on /metrics the apps it passed, so the figure counts the new
// replicas' own proofs, not the records they read.
func (b *fleetBench) restart(ctx context.Context, r *report, at string) error {
	for _, c := range b.replicas {
		c.stop()
		keepLog(c.log, b.shape.name+"-"+c.name+"-before-restart.log")
	}
	b.replicas, b.addrs, b.pprofs = nil, nil, nil
	if err := b.startReplicas(); err != nil {
		return err
	}
	var proven int
	took, err := benchPoll(ctx, b.shape.patience(20*time.Minute), "every app verified after the restart", func() bool {
		all := map[string]bool{}
		for _, addr := range b.addrs {
			maps.Copy(all, verifiedOn(addr))
		}
		if proven = len(all); proven < b.shape.apps {
			time.Sleep(time.Second)
		}
		return proven == b.shape.apps
	})
	if err != nil {
		return fmt.Errorf("%s of %s apps verified after the restart: %w", thousands(proven), thousands(b.shape.apps), err)
	}
	r.check(at+"restart of every replica → every app verified", recRound(took).String(), "≤ 60s", took <= 60*time.Second)
	b.printThrottled("during the restart")
	return nil
}
