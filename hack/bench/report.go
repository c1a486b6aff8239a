package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// report collects target checks so the run ends with one summary table.
type report struct {
	rows []row
}

type row struct {
	name   string
	got    string
	target string
	ok     bool
}

// check records a measurement against its target.
func (r *report) check(name, got, target string, ok bool) {
	r.rows = append(r.rows, row{name: name, got: got, target: target, ok: ok})
	mark := "ok"
	if !ok {
		mark = "MISSED"
	}
	fmt.Printf("   %-52s %-28s target %-14s %s\n", name, got, target, mark)
}

func (r *report) summary(w io.Writer) {
	met := 0
	for _, row := range r.rows {
		if row.ok {
			met++
		}
	}
	fmt.Fprintf(w, "\n%d of %d targets met\n", met, len(r.rows))
	for _, row := range r.rows {
		if !row.ok {
			fmt.Fprintf(w, "  missed: %s: %s (target %s)\n", row.name, row.got, row.target)
		}
	}
}

// ratio formats a/b as "1.23x".
func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", float64(a)/float64(b))
}

// peakRSS returns a process's peak resident set size in bytes (VmHWM), read
// from /proc. It is how child processes are measured.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing VmHWM %q: %w", line, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// mb formats bytes as MB.
func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }
