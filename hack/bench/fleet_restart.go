package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
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
	cpu := readCPU()
	if err := b.startReplicas(); err != nil {
		return err
	}
	// Where the restart's time goes, as at the start.
	go saveProfile(b.pprof, "profile?seconds=30", filepath.Join("hack", "bench", "out", b.shape.name+"-restart-cpu.pprof"))
	go saveAPIServerProfile(ctx, b.kube, 30, filepath.Join("hack", "bench", "out", b.shape.name+"-restart-hub-apiserver-cpu.pprof"))
	time.AfterFunc(19*time.Second, func() {
		saveProfile(b.pprof, "goroutine?debug=1", filepath.Join("hack", "bench", "out", b.shape.name+"-restart-goroutines.txt"))
	})
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
	fmt.Printf("   the machine during the restart: %s\n", readCPU().since(cpu))
	b.printThrottled("during the restart")
	return nil
}
