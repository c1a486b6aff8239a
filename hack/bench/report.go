package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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

// info prints a measurement that has no target of its own.
func (r *report) info(name, got string) {
	fmt.Printf("   %-52s %s\n", name, got)
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

// runPeakRSS runs cmd and returns its peak RSS: the high-water mark
// (VmHWM) of the child's own address space, polled from /proc while it
// runs. The rusage maxRSS would not do here: on Linux, exec folds the
// high-water RSS of the address space it replaces into the process's
// maxrss, and os/exec starts children sharing this (much larger) process's
// address space, so every child would report at least this process's peak.
func runPeakRSS(cmd *exec.Cmd) (int64, error) {
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	done := make(chan struct{})
	peakc := make(chan int64, 1)
	go func() {
		var peak int64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if hwm := vmHWM(status); hwm > peak {
				peak = hwm
			}
			select {
			case <-done:
				peakc <- peak
				return
			case <-tick.C:
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	peak := <-peakc
	return peak, err
}

// vmHWM reads the VmHWM line of a /proc status file, in bytes; 0 when it
// cannot (the process is gone, or a zombie without an address space).
func vmHWM(path string) int64 {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
			return kb * 1024
		}
	}
	return 0
}

// buildPinbot builds the pinbot binary to out as it is released: static
// (CGO_ENABLED=0). A cgo build is linked dynamically, and the loader's
// mapping of it adds some 40 MB of file-backed RSS before main runs.
func buildPinbot(ctx context.Context, out string) error {
	build := exec.CommandContext(ctx, "go", "build", "-o", out, "pinbot.dev/pinbot/cmd/pinbot")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building pinbot: %w\n%s", err, b)
	}
	return nil
}

// workWithPinbot makes a temporary directory for the section name and
// builds pinbot into it (buildPinbot); done removes the directory.
func workWithPinbot(ctx context.Context, name string) (tmp, bin string, done func(), err error) {
	tmp, err = os.MkdirTemp("", "pinbot-bench-"+name+"-")
	if err != nil {
		return "", "", nil, err
	}
	bin = filepath.Join(tmp, "pinbot")
	if err := buildPinbot(ctx, bin); err != nil {
		os.RemoveAll(tmp)
		return "", "", nil, err
	}
	return tmp, bin, func() { os.RemoveAll(tmp) }, nil
}

// mb formats bytes as MB.
func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }

// idleRSS starts bin resolving an image on a loopback registry that
// accepts the connection and never answers, and once pinbot has connected
// (it is then initialised and waiting) reads its resident memory: anonymous
// (heap, stacks) and file-backed (the executable's pages).
func idleRSS(ctx context.Context, bin string) (anon, file int64, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer ln.Close()
	cmd := exec.CommandContext(ctx, bin, "resolve", ln.Addr().String()+"/idle/app:v1")
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(30 * time.Second))
	conn, err := ln.Accept()
	if err != nil {
		return 0, 0, fmt.Errorf("waiting for pinbot to connect: %w", err)
	}
	defer conn.Close()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		var kb int64
		if rest, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
			anon = kb * 1024
		}
		if rest, ok := strings.CutPrefix(line, "RssFile:"); ok {
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
			file = kb * 1024
		}
	}
	return anon, file, nil
}

// printIdleRSS prints idleRSS and the executable's size: the measured
// floor under every peak RSS figure.
func printIdleRSS(ctx context.Context, bin string) {
	anon, file, err := idleRSS(ctx, bin)
	if err != nil {
		fmt.Printf("   pinbot's idle RSS: not measured: %s\n", err)
		return
	}
	size := int64(0)
	if fi, err := os.Stat(bin); err == nil {
		size = fi.Size()
	}
	fmt.Printf("   pinbot initialised and idle: %s RSS, of which %s file-backed (pages of its %s executable) and %s anonymous\n",
		mb(anon+file), mb(file), mb(size), mb(anon))
}

// phases lists the steps a -v run logged with their times and when each
// ended since started ("fetched 120ms @180ms, ..."), then the run's end.
func phases(log string, started time.Time) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		msg, took := logField(line, "msg"), logField(line, "took")
		if msg == "" || took == "" {
			continue
		}
		at := ""
		if t, err := time.Parse(time.RFC3339Nano, logField(line, "time")); err == nil {
			at = " @" + promoteRound(t.Sub(started)).String()
		}
		out = append(out, msg+" "+took+at)
	}
	out = append(out, "exit @"+promoteRound(time.Since(started)).String())
	return strings.Join(out, ", ")
}

// logField is the value of key in a slog text line, unquoted.
func logField(line, key string) string {
	var v string
	if strings.HasPrefix(line, key+"=") {
		v = line[len(key)+1:]
	} else if i := strings.Index(line, " "+key+"="); i >= 0 {
		v = line[i+len(key)+2:]
	} else {
		return ""
	}
	if strings.HasPrefix(v, `"`) {
		if j := strings.Index(v[1:], `"`); j >= 0 {
			return v[1 : j+1]
		}
		return ""
	}
	if j := strings.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	return v
}
