package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"pinbot.dev/pinbot/internal/kubemetrics"
)

// The idle measurements: `pinbot reconcile` as a child process watching
// the in-sync rollout app.
const (
	idleSettle   = 20 * time.Second // before RSS is read, and before the load window
	loadInterval = 5 * time.Second  // the loop's interval during the load window
	loadWindow   = 60 * time.Second
)

// idle runs two `pinbot reconcile` processes on the in-sync, verified
// rollout app at once: one with the default interval (60s) whose resident
// memory is read from /proc after idleSettle, and one with a 5s interval
// whose every API request passes through a counting proxy. Requests are
// counted over loadWindow after idleSettle, so start-up (discovery, the
// first lists, the watches) is reported apart from the steady state.
func (b *recBench) idle(ctx context.Context, r *report) error {
	proxy, counter, err := b.countingProxy()
	if err != nil {
		return err
	}
	defer proxy.Close()
	kubeconfig, err := b.proxyKubeconfig(proxy)
	if err != nil {
		return err
	}
	loadCfg, err := b.config("idle-load.yaml", loadInterval, recApp{name: rolloutApp, automated: true})
	if err != nil {
		return err
	}
	rssCfg, err := b.config("idle-rss.yaml", time.Minute, recApp{name: rolloutApp, automated: true})
	if err != nil {
		return err
	}
	bare, err := b.bareRSS(ctx, rssCfg)
	if err != nil {
		return err
	}

	load, err := b.startReconcile(ctx, "load", loadCfg, kubeconfig)
	if err != nil {
		return err
	}
	defer load.stop()
	rss, err := b.startReconcile(ctx, "rss", rssCfg, b.cluster.Kubeconfig)
	if err != nil {
		return err
	}
	defer rss.stop()

	// These waits are the measurement windows themselves.
	if err := recSleep(ctx, idleSettle, load, rss); err != nil {
		return err
	}
	cur, peak, file, err := procMemoryDetail(rss.cmd.Process.Pid)
	if err != nil {
		return err
	}
	rss.stop()
	fmt.Printf("   pinbot reconcile, one in-sync app, interval 60s, after %v: VmRSS %s (%s of it file-backed: the executable), VmHWM (peak) %s\n",
		idleSettle, mb(cur), mb(file), mb(peak))
	fmt.Printf("     baseline: the same binary at its first API request (initialised, no work): VmRSS %s\n", mb(bare))
	r.check("reconciler RSS idle, one app", fmt.Sprintf("%s (peak %s; bare binary %s)", mb(cur), mb(peak), mb(bare)),
		"<= 80 MB", cur <= 80<<20)

	startup := counter.snapshot()
	if err := recSleep(ctx, loadWindow, load); err != nil {
		return err
	}
	window := counter.snapshot()[len(startup):]
	lcur, lpeak, err := procMemory(load.cmd.Process.Pid)
	if err != nil {
		return err
	}
	load.stop()

	fmt.Printf("   pinbot reconcile, interval %v, API requests through a counting proxy:\n", loadInterval)
	fmt.Printf("     start-up (first %v): %s\n", idleSettle, recSummary(startup))
	fmt.Printf("     steady state (next %v, %d intervals): %s\n", loadWindow, int(loadWindow/loadInterval), recSummary(window))
	for _, l := range recBreakdown(window) {
		fmt.Printf("       %s\n", l)
	}
	fmt.Printf("     VmRSS after %v at a %v interval: %s (peak %s)\n", idleSettle+loadWindow, loadInterval, mb(lcur), mb(lpeak))
	perMin := float64(len(window)) / loadWindow.Minutes()
	n := recCount(window)
	r.check("API load, idle in-sync app, 5s interval", fmt.Sprintf("%.0f req/min (%d mutating)", perMin, n["mutating"]), "reported", true)
	intervals := float64(loadWindow / loadInterval)
	r.check("steady-state LISTs per interval", fmt.Sprintf("%.1f LIST, %d WATCH opened", float64(n["LIST"])/intervals, n["WATCH"]),
		"0 (watch-based)", n["LIST"] == 0)
	return nil
}

// bareRSS is the resident memory of the same binary before it does any
// work: `pinbot reconcile` with the app's config, held at its first API
// request by a listener that accepts and never answers. (A child's
// rusage maxrss is no use here: on Linux it starts from the parent's
// resident size at the fork, and this bench process is larger. A FIFO
// for its config held it earlier, before pinbot learned to refuse one.)
func (b *recBench) bareRSS(ctx context.Context, config string) (int64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	reached := make(chan net.Conn, 1)
	go func() {
		if conn, err := ln.Accept(); err == nil {
			reached <- conn
		}
	}()
	kc := filepath.Join(b.tmp, "held.kubeconfig")
	if err := os.WriteFile(kc, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: held, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: held, user: {token: held}}]
contexts: [{name: held, context: {cluster: held, user: held}}]
current-context: held
`, ln.Addr())), 0o600); err != nil {
		return 0, err
	}
	c, err := b.startReconcile(ctx, "bare", config, kc)
	if err != nil {
		return 0, err
	}
	defer c.stop()
	select {
	case conn := <-reached:
		defer conn.Close()
	case <-c.exited:
		return 0, c.failure()
	case <-time.After(30 * time.Second):
		return 0, errors.New("pinbot reconcile made no API request within 30s")
	}
	rss, _, err := procMemory(c.cmd.Process.Pid)
	return rss, err
}

// recChild is a running pinbot command of the bench's.
type recChild struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	once   sync.Once
}

// startReconcile starts `pinbot reconcile` with config on the cluster
// kubeconfig names; its log goes to a file.
func (b *recBench) startReconcile(ctx context.Context, name, config, kubeconfig string) (*recChild, error) {
	return b.startChild(name, filepath.Join(b.tmp, "reconcile-"+name+".log"), "reconcile", "--config", config, "--kubeconfig", kubeconfig,
		"--cache-dir", filepath.Join(b.tmp, "cache-reconcile-"+name))
}

// startChild starts the bench's pinbot with args, its output going to
// the file log.
func (b *recBench) startChild(name, log string, args ...string) (*recChild, error) {
	c := &recChild{name: name, log: log, exited: make(chan struct{})}
	logFile, err := os.Create(c.log)
	if err != nil {
		return nil, err
	}
	c.cmd = exec.Command(b.bin, args...)
	c.cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+b.docker)
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	if err := c.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting pinbot %s: %w", args[0], err)
	}
	go func() {
		_ = c.cmd.Wait()
		logFile.Close()
		close(c.exited)
	}()
	return c, nil
}

// stop ends the process by its PID: SIGTERM, then SIGKILL after 30s.
func (c *recChild) stop() {
	c.once.Do(func() {
		select {
		case <-c.exited:
			return
		default:
		}
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(30 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	})
}

// failure describes a process that exited early, with its log's tail.
func (c *recChild) failure() error {
	tail, _ := os.ReadFile(c.log)
	if len(tail) > 2000 {
		tail = tail[len(tail)-2000:]
	}
	return fmt.Errorf("pinbot %s (%s) exited early: %s\n%s", c.cmd.Args[1], c.name, c.cmd.ProcessState, tail)
}

// recSleep waits d, failing if ctx ends or one of the children exits.
func recSleep(ctx context.Context, d time.Duration, children ...*recChild) error {
	deadline := time.After(d)
	for {
		for _, c := range children {
			select {
			case <-c.exited:
				return c.failure()
			default:
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// procMemory reads a live process's current and peak resident set size.
func procMemory(pid int) (rss, hwm int64, err error) {
	rss, hwm, _, err = procMemoryDetail(pid)
	return rss, hwm, err
}

// procMemoryDetail is procMemory plus the resident size of file mappings
// (the executable's pages) within rss.
func procMemoryDetail(pid int) (rss, hwm, file int64, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, fmt.Errorf("reading the memory of process %d: %w", pid, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			hwm = kb << 10
		case "RssFile:":
			file = kb << 10
		}
	}
	if rss == 0 {
		return 0, 0, 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
	}
	return rss, hwm, file, nil
}

// apiRequest is one request a client made to the API server.
type apiRequest struct {
	at       time.Time
	verb     string // LIST, GET, WATCH, CREATE, UPDATE, PATCH, DELETE or DISCOVERY
	resource string // e.g. "configmaps", "deployments.apps", or the path for DISCOVERY
	path     string // the URL path
	replica  string // the serve replica asking, from its User-Agent's "replica/<id>"
}

// apiCounter records the requests passing through the proxy.
type apiCounter struct {
	mu   sync.Mutex
	reqs []apiRequest
}

func (c *apiCounter) add(r apiRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, r)
}

func (c *apiCounter) snapshot() []apiRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]apiRequest(nil), c.reqs...)
}

// countingProxy is a TLS reverse proxy on loopback (HTTP/2, streaming
// watches) in front of the API server: it records each request and
// forwards it with the cluster's admin credentials.
func (b *recBench) countingProxy() (*httptest.Server, *apiCounter, error) {
	return countingProxyFor(b.cluster.Config())
}

// countingProxyFor is countingProxy in front of the API server rc reaches.
func countingProxyFor(rc *rest.Config) (*httptest.Server, *apiCounter, error) {
	target, err := url.Parse(rc.Host)
	if err != nil {
		return nil, nil, err
	}
	transport, err := rest.TransportFor(rc)
	if err != nil {
		return nil, nil, err
	}
	counter := &apiCounter{}
	quiet := log.New(io.Discard, "", 0)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Header.Del("Authorization") // the transport adds the admin token
		},
		Transport:     transport,
		FlushInterval: -1,
		ErrorLog:      quiet,
		ErrorHandler:  func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		counter.add(classify(req))
		proxy.ServeHTTP(w, req)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = quiet
	srv.StartTLS()
	return srv, counter, nil
}

// proxyConfig is a client configuration for the proxy, trusting its
// certificate; the token is a placeholder the proxy drops.
func proxyConfig(srv *httptest.Server) *rest.Config {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return &rest.Config{Host: srv.URL, BearerToken: "counted-by-the-proxy", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
}

// proxyKubeconfig writes a kubeconfig pointing at the proxy, trusting its
// certificate; the token in it is a placeholder the proxy drops.
func (b *recBench) proxyKubeconfig(srv *httptest.Server) (string, error) {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["bench"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: ca}
	cfg.AuthInfos["bench"] = &clientcmdapi.AuthInfo{Token: "counted-by-the-proxy"}
	cfg.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: "bench"}
	cfg.CurrentContext = "bench"
	path := filepath.Join(b.tmp, "proxy.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("writing the proxy kubeconfig: %w", err)
	}
	return path, nil
}

// classify names a request's verb and resource from its method and path,
// as the API server's request info does.
func classify(req *http.Request) apiRequest {
	r := apiRequest{at: time.Now(), verb: "DISCOVERY", resource: req.URL.Path, path: req.URL.Path}
	if _, id, ok := strings.Cut(req.UserAgent(), " replica/"); ok {
		r.replica = id
	}
	resource, named := kubemetrics.Resource(req.URL.Path)
	if resource == "" {
		return r
	}
	r.resource = resource
	switch req.Method {
	case http.MethodGet:
		switch w := req.URL.Query().Get("watch"); {
		case w == "true" || w == "1":
			r.verb = "WATCH"
		case named:
			r.verb = "GET"
		default:
			r.verb = "LIST"
		}
	case http.MethodPost:
		r.verb = "CREATE"
	case http.MethodPut:
		r.verb = "UPDATE"
	case http.MethodPatch:
		r.verb = "PATCH"
		if req.URL.Query().Has("dryRun") {
			r.verb = "DRY-RUN"
		}
	case http.MethodDelete:
		r.verb = "DELETE"
	default:
		r.verb = req.Method
	}
	return r
}

// recCount counts requests by verb, and the mutating ones together.
func recCount(reqs []apiRequest) map[string]int {
	n := map[string]int{}
	for _, r := range reqs {
		n[r.verb]++
		switch r.verb {
		case "CREATE", "UPDATE", "PATCH", "DELETE":
			n["mutating"]++
		}
	}
	return n
}

// recSummary is "N requests: a LIST, b GET, ...".
func recSummary(reqs []apiRequest) string {
	n := recCount(reqs)
	var parts []string
	for _, v := range []string{"LIST", "GET", "WATCH", "DISCOVERY", "mutating"} {
		parts = append(parts, fmt.Sprintf("%d %s", n[v], v))
	}
	return fmt.Sprintf("%d requests: %s", len(reqs), strings.Join(parts, ", "))
}

// recBreakdown lists "verb resource: count", most frequent first.
func recBreakdown(reqs []apiRequest) []string {
	n := map[string]int{}
	for _, r := range reqs {
		n[r.verb+" "+r.resource]++
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if n[keys[i]] != n[keys[j]] {
			return n[keys[i]] > n[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%-48s %d", k, n[k]))
	}
	return out
}
