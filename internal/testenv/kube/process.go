package kube

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one control-plane component running as a child process, its
// stdout and stderr going to one log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed once the process has exited
	err  error         // how it exited; read only after done is closed
}

// startProcess starts bin with args, logging to logPath.
func startProcess(name, bin, logPath string, args []string) (*process, error) {
	return startProcessEnv(name, bin, logPath, nil, args)
}

// startProcessEnv is startProcess with env added to this process's
// environment.
func startProcessEnv(name, bin, logPath string, env, args []string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = sysProcAttr()
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if err := spawn(cmd); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports an error if the process is no longer running.
func (p *process) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited early (%w); last lines of %s:\n%s", p.name, exitErr(p.err), p.log, tail(p.log, 30))
	default:
		return nil
	}
}

func exitErr(err error) error {
	if err == nil {
		return errors.New("exit status 0")
	}
	return err
}

// stop sends SIGTERM, waits up to grace, then sends SIGKILL.
func (p *process) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling %s (pid %d): %w", p.name, p.cmd.Process.Pid, err)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing %s (pid %d): %w", p.name, p.cmd.Process.Pid, err)
	}
	<-p.done
	return nil
}

// spawnReq asks the spawner goroutine to start a command.
type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

var spawnCh = make(chan spawnReq)

// spawn starts cmd from one goroutine locked to its OS thread for the life
// of the process. On Linux the children get SIGKILL when the thread that
// forked them exits (Pdeathsig); a thread that never exits makes that
// signal mean "the test binary died", so crashed or timed-out test runs
// leave no control plane behind.
func spawn(cmd *exec.Cmd) error {
	req := spawnReq{cmd: cmd, err: make(chan error, 1)}
	spawnCh <- req
	return <-req.err
}

func init() {
	go func() {
		runtime.LockOSThread()
		for req := range spawnCh {
			req.err <- req.cmd.Start()
		}
	}()
}

// tailAll returns the last n lines of each process's log, labelled.
func tailAll(procs []*process, n int) string {
	var b strings.Builder
	for _, p := range procs {
		fmt.Fprintf(&b, "==> %s (%s) <==\n%s\n", p.name, p.log, tail(p.log, n))
	}
	return b.String()
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %s)", path, err.Error())
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 4*n {
			lines = lines[len(lines)-n:]
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. They are held
// open together so the kernel cannot hand out the same one twice.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free loopback port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Binary names Start needs in the bin directory.
var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager"}

// findBinDir returns the directory holding the control-plane binaries:
// dir if set, else $PINBOT_BIN_DIR, else bin/ of the pinbot module found by
// walking up from the working directory.
func findBinDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv("PINBOT_BIN_DIR")
	}
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin")
	}
	for _, b := range binaries {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("finding %s in %s: %w (run `make kube` to build the control plane)", b, dir, err)
		}
	}
	return dir, nil
}

// moduleRoot walks up from the working directory to the directory whose
// go.mod declares module pinbot.dev/pinbot.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the pinbot module root: %w", err)
	}
	for dir := wd; ; {
		if isPinbotModule(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("finding the pinbot module root: no go.mod of module pinbot.dev/pinbot above %s; set PINBOT_BIN_DIR", wd)
		}
		dir = parent
	}
}

func isPinbotModule(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		return line == "module pinbot.dev/pinbot"
	}
	return false
}

// procGroup is processes a peer runs, stopped together.
type procGroup struct {
	procs   []*process
	stop    sync.Once
	stopErr error
}

// Tail returns the last n lines of each process's log, labelled, for a
// failure message.
func (g *procGroup) Tail(n int) string { return tailAll(g.procs, n) }

// Stop terminates the processes in reverse start order (SIGTERM, then
// SIGKILL after a grace period). It is safe to call more than once.
func (g *procGroup) Stop() error {
	g.stop.Do(func() {
		var errs []error
		for i := len(g.procs) - 1; i >= 0; i-- {
			if err := g.procs[i].stop(10 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		g.stopErr = errors.Join(errs...)
	})
	return g.stopErr
}
