package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"pinbot.dev/pinbot/dashboard"
)

// serveEnv set to "0" (or the flag noServeFlag) skips the serve step, so
// that a script or CI run of the demo ends instead of waiting for Ctrl-C;
// set to "once", serve starts, the dashboard's apps are shown, and the
// demo ends.
const (
	serveEnv    = "PINBOT_DEMO_SERVE"
	noServeFlag = "--no-serve"
)

// skipServe reports whether the serve step is off, by env or by args.
func skipServe(env string, args []string) bool {
	return env == "0" || slices.Contains(args, noServeFlag)
}

// serve runs `pinbot serve` on the demo's cluster and Gitea, prints the
// dashboard's URL, and waits for Ctrl-C; then it stops serve by its PID
// (SIGTERM, then SIGKILL after 30 s).
func (d *demo) serve(ctx context.Context) error {
	if skipServe(os.Getenv(serveEnv), os.Args[1:]) {
		fmt.Printf("\n(%s=0 or %s: not starting pinbot serve)\n", serveEnv, noServeFlag)
		return nil
	}
	if d.reconcilerConfig == "" {
		return errors.New("the serve step needs the cluster half to have run")
	}
	banner("pinbot serve: every app the demo ran, its release chain, webhooks and the dashboard, in one process")
	config, err := d.finalConfig()
	if err != nil {
		return err
	}
	srv, err := d.startServe(ctx, "serve", config)
	if err != nil {
		return err
	}
	d.closers = append(d.closers, srv.stop)
	base := "http://" + srv.addr
	fmt.Printf("\npinbot serve is running (PID %d, log %s).\n", srv.cmd.Process.Pid, srv.logFile)
	fmt.Printf("Dashboard: %s/         every app the demo ran: web (pinbot's), guestbook (Argo CD's), shop-staging and shop-prod\n", base)
	fmt.Printf("Releases:  %s/releases the release chain: what is proven where, the hold and the rollback\n", base)
	fmt.Printf("Open it:   xdg-open %s/    (or: curl -s %s/api/v1/apps)\n", base, base)
	if err := d.showDashboard(ctx, base); err != nil {
		return err
	}
	if os.Getenv(serveEnv) == "once" {
		return nil
	}
	fmt.Println("Press Ctrl-C to stop pinbot serve, the cluster and Gitea.")
	select {
	case <-ctx.Done():
		return nil
	case err := <-srv.exited:
		srv.exited <- err // for the closer
		return fmt.Errorf("pinbot serve exited: %v (log: %s)", err, srv.logFile)
	}
}

// finalConfig writes the last serve's config: every app and promote
// entry the steps before ran, so the dashboard shows the demo's own
// release chain, its hold and its rollback.
func (d *demo) finalConfig() (string, error) {
	body := fmt.Sprintf("interval: 10s\nforge: {url: %q, tokenFile: %q}\napps:\n", d.gitea.URL, d.token)
	for _, a := range d.ran.apps {
		body += "  - " + a + "\n"
	}
	if len(d.ran.promote) > 0 {
		body += "promote:\n"
		for _, p := range d.ran.promote {
			body += "  - " + p + "\n"
		}
	}
	config := filepath.Join(d.dir, "serve.yaml")
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		return "", err
	}
	fmt.Printf("\nserve's config (%s):\n%s", config, body)
	return config, nil
}

// showDashboard waits until the dashboard's API shows every app the demo
// ran as observed, and prints them as the apps page does.
func (d *demo) showDashboard(ctx context.Context, base string) error {
	var list dashboard.APIList
	for deadline := time.Now().Add(2 * time.Minute); ; {
		list = dashboard.APIList{}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+dashboard.APIPath, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&list)
			resp.Body.Close()
		}
		observed := 0
		for _, a := range list.Apps {
			if a.ObservedAt != nil {
				observed++
			}
		}
		if err == nil && observed == len(d.ran.apps) && len(list.Apps) == len(d.ran.apps) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the dashboard shows %d of the demo's %d apps observed (err %v; see the serve log)", observed, len(d.ran.apps), err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	fmt.Println("\nThe dashboard's apps:")
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "  APP\tSOURCE\tSYNC\tHEALTH\tPROOF")
	for _, a := range list.Apps {
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", a.Name, a.Source, a.Sync, a.Health, a.Proof)
	}
	return w.Flush()
}

// freeLoopback is a free 127.0.0.1 address.
func freeLoopback() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitReady polls url until it answers 200, the process exits, or 60 s
// pass.
func waitReady(ctx context.Context, url string, exited chan error) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pinbot serve not ready at %s: %w", url, ctx.Err())
		case err := <-exited:
			exited <- err
			return fmt.Errorf("pinbot serve exited before it was ready: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stopByPID sends SIGTERM to p and waits for it to exit, killing it after
// 30 s.
func stopByPID(p *os.Process, exited chan error) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = p.Kill()
		<-exited
	}
}

// served is a pinbot serve the demo started.
type served struct {
	addr, logFile string
	cmd           *exec.Cmd
	exited        chan error // cmd.Wait's error, once it exits
	stop          func()
}

// startServe starts pinbot serve on config and a free loopback port, with
// a webhook secret, log and Git cache named after name in the demo's
// directory, and waits until it is ready. It runs in a process group of
// its own: Ctrl-C reaches the demo only, which stops serve in order,
// before the cluster and Gitea.
func (d *demo) startServe(ctx context.Context, name, config string, extra ...string) (*served, error) {
	addr, err := freeLoopback()
	if err != nil {
		return nil, err
	}
	secret := filepath.Join(d.dir, name+"-secret")
	if err := os.WriteFile(secret, []byte(fmt.Sprintf("demo-%d\n", time.Now().UnixNano())), 0o600); err != nil {
		return nil, err
	}
	logFile := filepath.Join(d.dir, name+".log")
	log, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--config", config, "--kubeconfig", d.kubeconfig,
		"--cache-dir", filepath.Join(d.dir, name+"-cache"), "--listen", addr, "--webhook-secret-file", secret}, extra...)
	fmt.Printf("\n$ pinbot %s\n", strings.Join(args, " "))
	cmd := exec.Command(d.pinbot, args...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+d.dockerConfig())
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting pinbot serve: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() { stopByPID(cmd.Process, exited); _ = log.Close() }
	if err := waitReady(ctx, "http://"+addr+"/readyz", exited); err != nil {
		stop()
		return nil, fmt.Errorf("%w (log: %s)", err, logFile)
	}
	return &served{addr: addr, logFile: logFile, cmd: cmd, exited: exited, stop: stop}, nil
}
