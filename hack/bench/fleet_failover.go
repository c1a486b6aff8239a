package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// failover kills one replica with SIGKILL and times until every app it
// passed is verified by another, then counts the apps with more than one
// Verified Event.
func (b *fleetBench) failover(ctx context.Context, r *report, at string) error {
	victim := b.replicas[1]
	gone := b.statuses.of(victim.name)
	for i, c := range b.replicas {
		if c != victim {
			go saveProfile(b.pprofs[i], "profile?seconds=25", filepath.Join("hack", "bench", "out", b.shape.name+"-failover-"+c.name+"-cpu.pprof"))
		}
	}
	// What a survivor's passes wait on once it took a shard over.
	for i, c := range b.replicas {
		if addr := b.pprofs[i]; c != victim {
			time.AfterFunc(24*time.Second, func() {
				saveProfile(addr, "goroutine?debug=1", filepath.Join("hack", "bench", "out", b.shape.name+"-failover-"+c.name+"-goroutines.txt"))
			})
		}
	}
	if err := victim.cmd.Process.Kill(); err != nil {
		return err
	}
	killed, cpu := time.Now(), readCPU()
	<-victim.exited
	var left int
	var moved []time.Duration // when each app was seen verified by another
	seen := map[string]bool{}
	// A survivor stores no status it finds unchanged: its /metrics, which
	// report the apps it passed, say when it proved them.
	took, err := benchPoll(ctx, b.shape.patience(5*time.Minute), "the killed replica's apps verified by the others", func() bool {
		proven := map[string]bool{}
		for i, c := range b.replicas {
			if c != victim {
				maps.Copy(proven, verifiedOn(b.addrs[i]))
			}
		}
		left = 0
		for _, app := range gone {
			if !proven[app] {
				left++
			} else if !seen[app] {
				seen[app] = true
				moved = append(moved, time.Since(killed))
			}
		}
		if left > 0 {
			time.Sleep(time.Second)
		}
		return left == 0
	})
	if err != nil {
		return fmt.Errorf("%d of %d apps: %w", left, len(gone), err)
	}
	if len(moved) > 0 {
		slices.Sort(moved)
		fmt.Printf("   after SIGKILL: the first app verified by another at %s, half at %s, the last at %s\n",
			recRound(moved[0]), recRound(moved[len(moved)/2]), recRound(moved[len(moved)-1]))
		fmt.Printf("   the machine from the SIGKILL until all were verified: %s\n", readCPU().since(cpu))
		// What the survivors asked the API servers from the first app
		// taken over to the last.
		from, to := killed.Add(moved[0]), killed.Add(moved[len(moved)-1])
		var took []apiRequest
		for _, c := range b.counters {
			for _, q := range c.snapshot() {
				if q.at.After(from) && q.at.Before(to) && q.replica != victim.name {
					took = append(took, q)
				}
			}
		}
		fmt.Printf("   the survivors' requests while they took over: %s\n", recSummary(took))
		for _, l := range recBreakdown(took)[:min(8, len(recBreakdown(took)))] {
			fmt.Printf("     %s\n", l)
		}
	}
	b.printThrottled("since they started (the survivors)")
	r.check(fmt.Sprintf("%sSIGKILL of a replica → its %s apps verified by the others (lease %s)", at, thousands(len(gone)), fleetLease),
		recRound(took).String(), "≤ 20s", took <= 20*time.Second)
	if err := recSleepPlain(ctx, 5*time.Second); err != nil {
		return err
	}
	dup, err := b.duplicateEvents(ctx)
	if err != nil {
		return err
	}
	r.check(at+"apps with a duplicate Verified Event after the failover", fmt.Sprint(len(dup))+examples(dup), "0", len(dup) == 0)
	return nil
}

// duplicateEvents lists the apps, other than those merged, with more than
// one Verified Event (objects or repeats): on their Applications, and on
// the records of pinbot's own apps.
func (b *fleetBench) duplicateEvents(ctx context.Context) ([]string, error) {
	merged := map[string]bool{}
	for m := range fleetMerges {
		merged[fleetName(m*fleetOwnEvery*7%b.shape.apps)] = true
	}
	n := map[string]int32{}
	for _, ns := range []string{"argocd", "pinbot-system"} {
		evs, err := b.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Verified"})
		if err != nil {
			return nil, err
		}
		for _, e := range evs.Items {
			app := strings.TrimPrefix(e.InvolvedObject.Name, "pinbot-app-")
			n[app] += max(e.Count, 1)
		}
	}
	var dup []string
	for app, c := range n {
		if c > 1 && !merged[app] {
			dup = append(dup, app)
		}
	}
	slices.Sort(dup)
	return dup, nil
}

// verifiedOn returns the apps the replica at addr reports verified on
// /metrics: with shards, of the apps it passed. It asks for that one
// metric, once a second at most: the whole exposition of thousands of
// apps, every 250 ms, took a sixth of a survivor's CPU while it took
// over.
func verifiedOn(addr string) map[string]bool {
	resp, err := http.Get("http://" + addr + "/metrics?name[]=pinbot_app_verified")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), `pinbot_app_verified{app="`)
		if !ok {
			continue
		}
		if app, v, ok := strings.Cut(rest, `"} `); ok && v == "1" {
			out[app] = true
		}
	}
	return out
}

// throttledOn returns what the replica at addr reports of client-go's
// rate limiter: the requests it held, their waits' sum in seconds, and
// that sum by method and resource.
func throttledOn(addr string) (held int, wait float64, by map[string]float64) {
	by = map[string]float64{}
	resp, err := http.Get("http://" + addr + "/metrics?name[]=pinbot_kube_client_throttled_seconds")
	if err != nil {
		return 0, 0, by
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &v); err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, "pinbot_kube_client_throttled_seconds_sum"):
			wait += v
			if v >= 0.05 {
				by[labelOf(line, "method")+" "+labelOf(line, "resource")] += v
			}
		case strings.HasPrefix(line, `pinbot_kube_client_throttled_seconds_bucket`) && strings.Contains(line, `le="0.001"`):
			held -= int(v) // the requests sent at once
		case strings.HasPrefix(line, "pinbot_kube_client_throttled_seconds_count"):
			held += int(v)
		}
	}
	return held, wait, by
}

// labelOf is the value of label name in a line of the text format.
func labelOf(line, name string) string {
	_, rest, ok := strings.Cut(line, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// printThrottled prints what client-side throttling held each live
// replica's requests so far, and for one held over a second in all, by
// what its requests asked for.
func (b *fleetBench) printThrottled(when string) {
	var parts []string
	for i, c := range b.replicas {
		select {
		case <-c.exited:
			continue
		default:
		}
		held, wait, by := throttledOn(b.addrs[i])
		part := fmt.Sprintf("%s %d requests, %.1f s", c.name, held, wait)
		if wait > 1 {
			var kinds []string
			for k, v := range by {
				kinds = append(kinds, fmt.Sprintf("%s %.1f s", k, v))
			}
			slices.Sort(kinds)
			part += " (" + strings.Join(kinds, ", ") + ")"
		}
		parts = append(parts, part)
	}
	fmt.Printf("   held by pinbot's client-side rate limit %s: %s\n", when, strings.Join(parts, "; "))
}
