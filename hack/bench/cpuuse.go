package main

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc's CPU times: 100
// on every Linux this bench runs on.
const clockTicks = 100

// cpuUse is the CPU time the machine and each command (by its /proc
// comm: kube-apiserver, etcd, pinbot, bench…) had used at one moment:
// what says whether a window was bound by the machine's cores, and
// whose work filled them.
type cpuUse struct {
	at    time.Time
	busy  float64             // seconds, all cores
	byPID map[int]commSeconds // seconds, by process
}

type commSeconds struct {
	comm    string // up to a slash: kworker/0:1 is kworker
	started string // the process's start time, which tells a reused PID
	seconds float64
}

func readCPU() cpuUse {
	u := cpuUse{at: time.Now(), byPID: map[int]commSeconds{}}
	if raw, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := bytes.Cut(raw, []byte("\n"))
		fields := strings.Fields(string(line))
		for i, f := range fields[1:] {
			if n, err := strconv.ParseFloat(f, 64); err == nil && i != 3 && i != 4 { // idle, iowait
				u.busy += n / clockTicks
			}
		}
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // gone since
		}
		open, closing := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
		if open < 0 || closing < open {
			continue
		}
		rest := strings.Fields(string(raw[closing+1:]))
		if len(rest) < 20 {
			continue
		}
		utime, _ := strconv.ParseFloat(rest[11], 64) // fields 14 and 15 of stat
		stime, _ := strconv.ParseFloat(rest[12], 64)
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		comm, _, _ := strings.Cut(string(raw[open+1:closing]), "/")
		u.byPID[pid] = commSeconds{comm: comm, started: rest[19], seconds: (utime + stime) / clockTicks}
	}
	return u
}

// since says how busy the machine's cores were from before to u, and
// which commands used them, the busiest first: a process started since
// counts from zero, one gone since is left out.
func (u cpuUse) since(before cpuUse) string {
	wall := u.at.Sub(before.at).Seconds()
	if wall <= 0 {
		return "no time passed"
	}
	byComm := map[string]float64{}
	for pid, now := range u.byPID {
		was := before.byPID[pid]
		if was.started != now.started {
			was.seconds = 0 // started since, or another process under a reused PID
		}
		byComm[now.comm] += now.seconds - was.seconds
	}
	comms := slices.Collect(maps.Keys(byComm))
	slices.SortFunc(comms, func(a, b string) int { return cmp.Compare(byComm[b], byComm[a]) })
	var parts []string
	for _, c := range comms {
		if cores := byComm[c] / wall; cores >= 0.01 {
			parts = append(parts, fmt.Sprintf("%s %.2f", c, cores))
		}
	}
	return fmt.Sprintf("%.2f of %d cores busy over %s; in cores: %s", (u.busy-before.busy)/wall, runtime.NumCPU(),
		time.Duration(wall*float64(time.Second)).Round(100*time.Millisecond), strings.Join(parts, ", "))
}
