package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"pinbot.dev/pinbot/pins/pinstest"
)

func init() { register("pins", benchPins) }

// pinsReps is how many times each command runs; the median counts.
const pinsReps = 11

// benchPins times `pinbot pins list` against `grep -rl sha256:` over the
// same generated tree, and one `pinbot pins set` that changes 100 files.
func benchPins(ctx context.Context, r *report) error {
	tmp, bin, done, err := workWithPinbot(ctx, "pins")
	if err != nil {
		return err
	}
	defer done()

	tree := filepath.Join(tmp, "tree")
	if err := os.Mkdir(tree, 0o755); err != nil {
		return err
	}
	st, err := pinstest.WriteTree(tree, pinstest.Tree{Files: 5000, Pins: 20000, Repos: 200, SetFiles: 100, Seed: 1})
	if err != nil {
		return fmt.Errorf("writing the tree: %w", err)
	}
	fmt.Printf("   tree: %d files, %d pins, 200 repositories, %s; %d runs each, median\n", st.Files, st.Pins, mb(st.Bytes), pinsReps)

	// Check the answer once, and warm the page cache for both commands.
	out, _, err := pinsRun(ctx, bin, "pins", "list", "--dir", tree, "-o", "json")
	if err != nil {
		return err
	}
	var listed []struct{ Image string }
	if err := json.Unmarshal(out, &listed); err != nil {
		return fmt.Errorf("reading pins list -o json: %w", err)
	}
	if len(listed) != st.Pins {
		return fmt.Errorf("pins list found %d pins, the tree holds %d", len(listed), st.Pins)
	}
	if _, _, err := pinsRun(ctx, "grep", "-rl", "sha256:", tree); err != nil {
		return err
	}

	// Interleave the three commands so that a busy machine slows them alike.
	var grepT, listT, jsonT, grepCPU, listCPU []time.Duration
	var rss int64
	for range pinsReps {
		for _, args := range [][]string{
			{"grep", "-rl", "sha256:", tree},
			{bin, "pins", "list", "--dir", tree},
			{bin, "pins", "list", "--dir", tree, "-o", "json"},
		} {
			cmd := exec.CommandContext(ctx, args[0], args[1:]...)
			start := time.Now()
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%s: %w", strings.Join(args, " "), err)
			}
			d := time.Since(start)
			cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			switch {
			case args[0] == "grep":
				grepT, grepCPU = append(grepT, d), append(grepCPU, cpu)
			case len(args) == 5:
				listT, listCPU = append(listT, d), append(listCPU, cpu)
			default:
				jsonT = append(jsonT, d)
			}
		}
	}
	// Peak RSS from separate runs, so polling /proc does not disturb the
	// timed ones.
	for _, output := range []string{"text", "json"} {
		peak, err := runPeakRSS(exec.CommandContext(ctx, bin, "pins", "list", "--dir", tree, "-o", output))
		if err != nil {
			return fmt.Errorf("pins list -o %s: %w", output, err)
		}
		rss = max(rss, peak)
	}
	grepM, listM, jsonM := pinsMedian(grepT), pinsMedian(listT), pinsMedian(jsonT)
	fmt.Printf("   grep -rl sha256: %v; pins list %v; pins list -o json %v\n", pinsRound(grepM), pinsRound(listM), pinsRound(jsonM))
	fmt.Printf("   CPU time (user+system): grep %v, pins list %v = %s; load average %s\n",
		pinsRound(pinsMedian(grepCPU)), pinsRound(pinsMedian(listCPU)), ratio(pinsMedian(listCPU), pinsMedian(grepCPU)), loadAverage())
	r.check("pins list vs grep -rl sha256:", fmt.Sprintf("%v / %v = %s", pinsRound(listM), pinsRound(grepM), ratio(listM, grepM)),
		"<= 3.00x", float64(listM) <= 3*float64(grepM))
	r.check("pins list -o json vs grep -rl sha256:", fmt.Sprintf("%v / %v = %s", pinsRound(jsonM), pinsRound(grepM), ratio(jsonM, grepM)),
		"<= 3.00x", float64(jsonM) <= 3*float64(grepM))
	r.check("pins list max RSS", mb(rss), "< 100 MB", rss < 100<<20)

	// One set per run, alternating two digests so each changes the same
	// 100 files.
	var setT []time.Duration
	for i := range pinsReps {
		digest := "sha256:" + strings.Repeat(string("ab"[i%2]), 64)
		out, d, err := pinsRun(ctx, bin, "pins", "set", st.Target+"@"+digest, "--dir", tree, "-o", "json")
		if err != nil {
			return err
		}
		var res struct{ Changes []struct{ File string } }
		if err := json.Unmarshal(out, &res); err != nil {
			return fmt.Errorf("reading pins set -o json: %w", err)
		}
		files := map[string]bool{}
		for _, c := range res.Changes {
			files[c.File] = true
		}
		if len(files) != 100 {
			return fmt.Errorf("pins set changed %d files, want 100", len(files))
		}
		setT = append(setT, d)
	}
	setM := pinsMedian(setT)
	r.check("pins set changing 100 of 5,000 files", pinsRound(setM).String(), "< 1s", setM < time.Second)
	return nil
}

// pinsRun runs a command and returns its stdout and wall time.
func pinsRun(ctx context.Context, name string, args ...string) ([]byte, time.Duration, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return nil, d, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.Bytes(), d, nil
}

func pinsMedian(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func pinsRound(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }

// loadAverage returns the one-minute load average, which says how much the
// timings above compete with other work, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}
