// Command debugshell is the shell of pinbot's -debug image, which a
// Jenkins container() step or `kubectl debug` runs: one static binary,
// built by make release from Go modules alone, that answers to the name
// it is called by, as busybox does.
//
//   - sh: a POSIX shell with bash's builtins (mvdan.cc/sh's interpreter):
//     sh -c CMD [NAME ARGS...], sh SCRIPT [ARGS...], or commands on stdin;
//     -e, -x, -u and the other set options as flags. The background jobs
//     a program ends on outlive it, each a process of its own (see
//     runProgram), as the Jenkins Kubernetes plugin's launcher needs.
//   - cat, chmod, cp, find, ls, mkdir, mv, rm, touch, xargs, base64,
//     gzip, gunzip, mktemp, shasum and tar: u-root's core commands.
//   - sleep SECONDS and nohup COMMAND, which the Kubernetes plugin of
//     Jenkins runs to keep a container alive and to start a step.
//   - id [-u|-g] [-n], and jq (gojq), which pipelines use on pinbot's
//     -o json output; grep (Go's regular expressions) and ps (from /proc).
//
// The shell runs the core commands, sleep and nohup in process; any
// other command runs from PATH.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	osuser "os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	gojq "github.com/itchyny/gojq/cli"
	"golang.org/x/term"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
	"mvdan.cc/sh/x/coreutils"
)

// Applets are the names the binary answers to; the -debug image links
// each in /bin.
var Applets = []string{
	"sh", "cat", "chmod", "cp", "find", "ls", "mkdir", "mv", "rm", "touch", "xargs",
	"base64", "gzip", "gunzip", "mktemp", "shasum", "tar", "sleep", "nohup", "id", "jq", "grep", "ps",
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, filepath.Base(os.Args[0]), os.Args[1:])
	stop()
	if es, ok := errors.AsType[interp.ExitStatus](err); ok {
		os.Exit(int(es))
	}
	if es, ok := errors.AsType[exit](err); ok {
		os.Exit(int(es))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run is the applet called as name, with args.
func run(ctx context.Context, name string, args []string) error {
	if name == "debugshell" {
		if len(args) == 0 {
			return fmt.Errorf("usage: debugshell APPLET [ARGS...]; applets: %s", strings.Join(Applets, " "))
		}
		name, args = args[0], args[1:]
	}
	switch name {
	case "sh":
		return shell(ctx, args)
	case "sleep":
		return sleep(ctx, args)
	case "nohup":
		return nohup(ctx, args)
	case "id":
		return id(args)
	case "grep":
		return grep(args)
	case "ps":
		return ps(args)
	case "jq":
		// gojq, a jq in Go, reads its arguments from os.Args.
		os.Args = append([]string{"jq"}, args...)
		if code := gojq.Run(); code != 0 {
			return interp.ExitStatus(code)
		}
		return nil
	}
	// A core command runs as the shell would run it.
	r, err := newRunner(append([]string{"--"}, args...))
	if err != nil {
		return err
	}
	prog, err := syntax.NewParser().Parse(strings.NewReader(strconv.Quote(name)+` "$@"`), name)
	if err != nil {
		return err
	}
	return r.Run(ctx, prog)
}

// newRunner is the interpreter with params (set options and positional
// parameters) and the in-process commands.
func newRunner(params []string) (*interp.Runner, error) {
	return interp.New(
		interp.StdIO(os.Stdin, os.Stdout, os.Stderr),
		interp.Params(params...),
		interp.ExecHandlers(builtins, coreutils.ExecHandler),
	)
}

// builtins runs sleep in process, so a script's sleep needs no fork.
func builtins(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return func(ctx context.Context, args []string) error {
		if args[0] != "sleep" {
			return next(ctx, args)
		}
		if err := sleep(ctx, args[1:]); err != nil {
			fmt.Fprintln(interp.HandlerCtx(ctx).Stderr, err)
			return interp.ExitStatus(1)
		}
		return nil
	}
}

// shell runs sh's command line: options, then -c's command, a script, or
// stdin.
func shell(ctx context.Context, args []string) error {
	var opts []string
	command := false
	for len(args) > 0 && len(args[0]) > 1 && (args[0][0] == '-' || args[0][0] == '+') && args[0] != "--" {
		a := args[0]
		args = args[1:]
		if a == "-o" || a == "+o" {
			if len(args) == 0 {
				return interp.ExitStatus(2)
			}
			opts, args = append(opts, a, args[0]), args[1:]
			continue
		}
		for _, c := range a[1:] {
			if c == 'c' {
				command = true
				continue
			}
			opts = append(opts, string(a[0])+string(c))
		}
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	var (
		src  io.Reader
		name string
	)
	switch {
	case command:
		if len(args) == 0 {
			return errors.New("sh: -c: option requires an argument")
		}
		src, args = strings.NewReader(args[0]), args[1:]
		if len(args) > 0 { // $0, then the positional parameters
			name, args = args[0], args[1:]
		}
	case len(args) > 0:
		f, err := os.Open(args[0])
		if err != nil {
			return fmt.Errorf("sh: %w", err)
		}
		defer f.Close()
		src, name, args = f, args[0], args[1:]
	default:
		src = os.Stdin
	}
	r, err := newRunner(append(append(opts, "--"), args...))
	if err != nil {
		return err
	}
	if src == os.Stdin && term.IsTerminal(int(os.Stdin.Fd())) {
		return interactive(ctx, r)
	}
	prog, err := syntax.NewParser().Parse(src, name)
	if err != nil {
		return err
	}
	return runProgram(ctx, r, prog, opts, name, args)
}

// runProgram runs prog. The background jobs it leaves running when it
// ends (its last statements, each ending in &) run as processes of their
// own, as a POSIX shell forks them: they outlive this shell, which exits
// at once. The interpreter would run them in this process, where the
// shell's exit ends them: the Jenkins durable-task launcher's
// `nohup sh -c "( ... ) >&- 2>&- &"` then never wrote its log or its
// result. Each such job gets the shell's variables, functions, options,
// parameters and working directory; its own background jobs and wait
// run in it as usual.
func runProgram(ctx context.Context, r *interp.Runner, prog *syntax.File, opts []string, name string, args []string) error {
	tail := len(prog.Stmts)
	for tail > 0 && prog.Stmts[tail-1].Background {
		tail--
	}
	if tail == len(prog.Stmts) {
		return r.Run(ctx, prog)
	}
	fg := *prog
	fg.Stmts = prog.Stmts[:tail]
	if err := r.Run(ctx, &fg); r.Exited() {
		return err
	}
	for _, st := range prog.Stmts[tail:] {
		if err := detach(r, st, opts, name, args); err != nil {
			return err
		}
	}
	return nil // the status of a command ending in &
}

// detach starts the background statement st as a process of this
// binary's sh, in a session of its own, without waiting for it.
func detach(r *interp.Runner, st *syntax.Stmt, opts []string, name string, args []string) error {
	exe, err := self()
	if err != nil {
		return fmt.Errorf("sh: starting a background job: %w", err)
	}
	var script strings.Builder
	p := syntax.NewPrinter()
	var env []string
	for _, v := range slices.Sorted(maps.Keys(r.Vars)) {
		val := r.Vars[v]
		switch {
		case !val.IsSet() || val.Kind != expand.String:
		case val.Exported:
			env = append(env, v+"="+val.Str)
		case !val.ReadOnly && !dynamic[v] && syntax.ValidName(v):
			q, err := syntax.Quote(val.Str, syntax.LangPOSIX)
			if err != nil {
				continue // a value sh cannot spell (a NUL): left out
			}
			fmt.Fprintf(&script, "%s=%s\n", v, q)
		}
	}
	for _, f := range slices.Sorted(maps.Keys(r.Funcs)) {
		if err := p.Print(&script, &syntax.FuncDecl{Name: &syntax.Lit{Value: f}, Body: r.Funcs[f]}); err != nil {
			return err
		}
		script.WriteString("\n")
	}
	job := *st
	job.Background = false
	if err := p.Print(&script, &job); err != nil {
		return err
	}
	// A background job reads /dev/null, as a POSIX shell's does; a root
	// without /dev (a bare chroot) lends it the shell's own stdin.
	stdin := os.Stdin
	if null, err := os.Open(os.DevNull); err == nil {
		defer null.Close()
		stdin = null
	}
	argv := append(append([]string{"sh"}, opts...), "-c", script.String(), cmp.Or(name, "sh"))
	cmd := &exec.Cmd{Path: exe, Args: append(argv, args...), Env: env, Dir: r.Dir,
		Stdin: stdin, Stdout: os.Stdout, Stderr: os.Stderr, SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("sh: starting a background job: %w", err)
	}
	return cmd.Process.Release()
}

// self is the path of this binary: from /proc, or where a root without
// /proc (a chroot) says the name it was called by is.
func self() (string, error) {
	exe, err := os.Executable()
	if err == nil {
		return exe, nil
	}
	if strings.Contains(os.Args[0], "/") {
		return os.Args[0], nil
	}
	return exec.LookPath(os.Args[0])
}

// dynamic are the variables the shell sets itself, which a background
// job's shell sets anew.
var dynamic = map[string]bool{"PPID": true, "RANDOM": true, "SECONDS": true, "LINENO": true, "PWD": true, "OLDPWD": true, "UID": true, "EUID": true, "GID": true, "OPTIND": true}

// interactive reads and runs commands from a terminal, with a prompt.
func interactive(ctx context.Context, r *interp.Runner) error {
	parser := syntax.NewParser()
	fmt.Fprint(os.Stdout, "$ ")
	var last error
	for stmts, err := range parser.InteractiveSeq(os.Stdin) {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			fmt.Fprint(os.Stdout, "$ ")
			continue
		}
		if parser.Incomplete() {
			fmt.Fprint(os.Stdout, "> ")
			continue
		}
		for _, stmt := range stmts {
			last = r.Run(ctx, stmt)
			if r.Exited() {
				return last
			}
		}
		fmt.Fprint(os.Stdout, "$ ")
	}
	return last
}

// sleep waits for the sum of its arguments, each a number (fractions
// allowed) with an optional suffix s, m, h or d, as coreutils' sleep takes
// them, or "infinity".
func sleep(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("sleep: missing operand")
	}
	units := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}
	var total time.Duration
	for _, a := range args {
		if a == "infinity" {
			<-ctx.Done()
			return nil
		}
		num, unit := a, time.Second
		if a == "" {
			return errors.New("sleep: invalid time interval \"\"")
		}
		if u, ok := units[a[len(a)-1]]; ok {
			num, unit = a[:len(a)-1], u
		}
		n, err := strconv.ParseFloat(num, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("sleep: invalid time interval %q", a)
		}
		total += time.Duration(n * float64(unit))
	}
	t := time.NewTimer(total)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// nohup runs a command that outlives a hangup.
func nohup(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("nohup: missing operand")
	}
	signal.Ignore(syscall.SIGHUP)
	path, err := exec.LookPath(args[0])
	if err != nil {
		return fmt.Errorf("nohup: %w", err)
	}
	return syscall.Exec(path, args, os.Environ())
}

// id prints the user's and group's ids as coreutils' id does: with no
// option "uid=N(name) gid=N(name) groups=N(name),…"; -u or -g one id, and
// with -n its name.
func id(args []string) error {
	var user, group, name bool
	for _, a := range args {
		if !strings.HasPrefix(a, "-") || len(a) < 2 {
			return fmt.Errorf("id: %s: naming a user is not supported", a)
		}
		for _, c := range a[1:] {
			switch c {
			case 'u':
				user = true
			case 'g':
				group = true
			case 'n':
				name = true
			default:
				return fmt.Errorf("id: -%c: unknown option (want -u, -g, -n)", c)
			}
		}
	}
	uid, gid := strconv.Itoa(os.Getuid()), strconv.Itoa(os.Getgid())
	userName := func(id string) string {
		if u, err := osuser.LookupId(id); err == nil {
			return u.Username
		}
		return id
	}
	groupName := func(id string) string {
		if g, err := osuser.LookupGroupId(id); err == nil {
			return g.Name
		}
		return id
	}
	switch {
	case user && name:
		fmt.Println(userName(uid))
	case user:
		fmt.Println(uid)
	case group && name:
		fmt.Println(groupName(gid))
	case group:
		fmt.Println(gid)
	default:
		groups, _ := os.Getgroups()
		list := []string{gid + "(" + groupName(gid) + ")"}
		for _, g := range groups {
			if s := strconv.Itoa(g); s != gid {
				list = append(list, s+"("+groupName(s)+")")
			}
		}
		fmt.Printf("uid=%s(%s) gid=%s(%s) groups=%s\n", uid, userName(uid), gid, groupName(gid), strings.Join(list, ","))
	}
	return nil
}
