package main

import (
	"fmt"
	"io"
	"os"
	"syscall"
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

// maxRSS returns the peak resident set size of a finished child process,
// from its rusage.
func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024 // Linux reports kilobytes
	}
	return 0
}

// mb formats bytes as MB.
func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }
