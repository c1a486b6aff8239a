package main

import (
	"bytes"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// ps lists the processes the container sees, from /proc: PID, USER,
// TIME (CPU, user and system) and COMMAND. Its arguments (aux, -ef, -e)
// are accepted and change nothing: it always lists them all.
func ps(args []string) error {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil || len(dirs) == 0 {
		return fmt.Errorf("ps: no processes under /proc (is /proc mounted?)")
	}
	tick := 100.0 // USER_HZ on every linux platform Go supports
	type proc struct {
		pid       int
		user, cmd string
		cpu       float64
	}
	var procs []proc
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue // gone since the glob
		}
		// comm is in parentheses and may hold spaces: fields follow the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		j := bytes.IndexByte(stat, '(')
		if i < 0 || j < 0 {
			continue
		}
		comm := string(stat[j+1 : i])
		f := strings.Fields(string(stat[i+1:]))
		var cpu float64
		if len(f) > 12 {
			u, _ := strconv.ParseFloat(f[11], 64)
			s, _ := strconv.ParseFloat(f[12], 64)
			cpu = (u + s) / tick
		}
		cmd := comm
		if c, err := os.ReadFile(filepath.Join(d, "cmdline")); err == nil && len(c) > 0 {
			cmd = strings.TrimSpace(strings.ReplaceAll(string(c), "\x00", " "))
		}
		procs = append(procs, proc{pid: pid, user: owner(d), cmd: cmd, cpu: cpu})
	}
	sort.Slice(procs, func(a, b int) bool { return procs[a].pid < procs[b].pid })
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tUSER\tTIME\tCOMMAND")
	for _, p := range procs {
		fmt.Fprintf(tw, "%d\t%s\t%d:%02d\t%s\n", p.pid, p.user, int(p.cpu)/60, int(p.cpu)%60, p.cmd)
	}
	return tw.Flush()
}

// owner is the user name of the process at /proc/PID dir, or its uid.
func owner(dir string) string {
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(status), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" {
			if u, err := user.LookupId(f[1]); err == nil {
				return u.Username
			}
			return f[1]
		}
	}
	return "?"
}
