// Package gitea starts a real Gitea (built into bin/gitea by `make gitea`)
// on loopback, with SQLite in a temporary directory and its container
// registry enabled, for pinbot's tests, `make demo` and `make bench`.
//
// It does not import "testing": the demo and the benchmark use it too. Tests
// use the giteatest package, which starts one server per test package.
package gitea

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults for Options.
const (
	DefaultAdminUser    = "pinbot-admin"
	DefaultStartTimeout = 60 * time.Second
	stopGrace           = 10 * time.Second
)

// Options configure Start. The zero value is a plain-HTTP server in a new
// temporary directory.
type Options struct {
	// TLS serves HTTPS (Git, API and registry) with a self-signed
	// certificate made by `gitea cert`; Server.CAFile holds its PEM.
	TLS bool
	// BinDir holds gitea and gitea.root; default BinDir().
	BinDir string
	// Dir is the work directory; default a new temporary directory, which
	// Stop removes. A given Dir must be empty and is kept.
	Dir string
	// StartTimeout bounds the wait for the API; default DefaultStartTimeout.
	StartTimeout time.Duration
}

// Server is a running Gitea. Its exported fields are read-only.
type Server struct {
	// URL is the root URL without a trailing slash, e.g. http://127.0.0.1:39017.
	URL string
	// RegistryHost is the container registry's host:port, e.g. 127.0.0.1:39017.
	RegistryHost string
	// AdminUser and AdminPassword log in as the site administrator.
	AdminUser, AdminPassword string
	// Token is an API token of AdminUser with every scope; it also works as
	// the password for Git over HTTP and for the container registry.
	Token string
	// Dir is the work directory (app.ini, SQLite database, repositories).
	Dir string
	// CAFile is the PEM of the self-signed certificate in TLS mode, else "".
	CAFile string
	// LogFile receives Gitea's output (warnings and errors).
	LogFile string
	// Version is what Gitea reports at /api/v1/version, e.g. "1.26.0".
	Version string
	// Started is how long Start took.
	Started time.Duration

	bin     string
	cfg     config
	removeD bool
	client  *http.Client
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	logFrom int64 // the log's size when this launch began
	stop    sync.Once
	stopErr error
}

// Start runs bin/gitea and returns once its API answers and the admin user
// and token exist. On error nothing is left running.
func Start(ctx context.Context, opts Options) (*Server, error) {
	began := time.Now()
	bin, root, err := binaries(opts.BinDir)
	if err != nil {
		return nil, err
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	// A free port can be taken by someone else between our probe and
	// Gitea's bind (other test packages start Gitea at the same time), so
	// a bind failure is retried on a new port.
	var s *Server
	for attempt := 1; ; attempt++ {
		s, err = start(ctx, bin, root, opts)
		if err == nil || !errors.Is(err, errPortTaken) || attempt == 3 {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	s.Started = time.Since(began)
	return s, nil
}

var errPortTaken = errors.New("port already in use")

func start(ctx context.Context, bin, root string, opts Options) (_ *Server, err error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, removeDir := opts.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "pinbot-gitea-"); err != nil {
			return nil, fmt.Errorf("starting Gitea: %w", err)
		}
		removeDir = true
	}
	// Gitea writes absolute paths into Git hooks; use the real one.
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	cfg := newConfig(dir, root, port, opts.TLS)
	s := &Server{
		URL:           cfg.URL(),
		RegistryHost:  fmt.Sprintf("127.0.0.1:%d", port),
		AdminUser:     DefaultAdminUser,
		AdminPassword: "pw-" + hexString(12),
		Dir:           dir,
		LogFile:       filepath.Join(dir, "gitea.log"),
		bin:           bin,
		cfg:           cfg,
		removeD:       removeDir,
		exited:        make(chan struct{}),
	}
	defer func() {
		if err != nil {
			err = s.withLog(err)
			_ = s.Stop()
		}
	}()
	if err := cfg.write(); err != nil {
		return s, err
	}
	if opts.TLS {
		if err := s.run(ctx, "cert", "--host", "127.0.0.1,localhost", "--ca", "--ecdsa-curve", "P256",
			"--out", cfg.CertFile, "--keyout", cfg.KeyFile); err != nil {
			return s, fmt.Errorf("making a TLS certificate: %w", err)
		}
		s.CAFile = cfg.CertFile
	}
	if s.client, err = httpClient(s.CAFile); err != nil {
		return s, err
	}
	if err := seedDatabase(ctx, s); err != nil {
		return s, err
	}
	if err := s.launch(); err != nil {
		return s, err
	}
	if err := s.waitReady(ctx); err != nil {
		return s, err
	}
	if s.Token, err = s.createToken(ctx, s.AdminUser, s.AdminPassword); err != nil {
		return s, fmt.Errorf("creating the admin token: %w", err)
	}
	return s, nil
}

// freePort is a variable so that a test can hand out a taken port.
var freePort = func() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func httpClient(caFile string) (*http.Client, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("reading Gitea's certificate: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("reading Gitea's certificate %s: no PEM certificate", caFile)
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: t, Timeout: 30 * time.Second}, nil
}

// HTTPClient returns a client that trusts the server (its CA in TLS mode).
func (s *Server) HTTPClient() *http.Client { return s.client }

// env is the environment of every gitea process: the caller's, minus Git
// variables that would redirect Gitea's own git calls, plus the work paths.
func (s *Server) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "GITEA_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"GITEA_WORK_DIR="+s.Dir,
		"GITEA_CUSTOM="+filepath.Join(s.Dir, "custom"),
	)
}

func (s *Server) globalArgs() []string {
	return []string{"--work-path", s.Dir, "--custom-path", filepath.Join(s.Dir, "custom"), "--config", s.cfg.iniPath()}
}

// run runs one gitea CLI command to completion.
func (s *Server) run(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, s.bin, append(s.globalArgs(), args...)...)
	cmd.Dir = s.Dir
	cmd.Env = s.env()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("gitea %s: %w: %s", args[0], err, lastLines(string(out), 20))
	}
	return nil
}

// launch starts `gitea web` in the background.
func (s *Server) launch() error {
	logf, err := os.OpenFile(s.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("starting Gitea: %w", err)
	}
	defer logf.Close() // the child holds its own descriptor
	if fi, err := logf.Stat(); err == nil {
		s.logFrom = fi.Size()
	}
	cmd := exec.Command(s.bin, append(s.globalArgs(), "web", "--quiet")...)
	cmd.Dir = s.Dir
	// Start-up allocates a lot and frees little: collecting garbage then is
	// a fifth of the CPU. Collect only near a generous memory limit instead.
	cmd.Env = append(s.env(), "GOGC=off", "GOMEMLIMIT=512MiB")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting Gitea: %w", err)
	}
	s.cmd = cmd
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	return nil
}

// waitReady polls /api/v1/version until it answers, Gitea exits, or ctx ends.
func (s *Server) waitReady(ctx context.Context) error {
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		// Another process may hold the port and never answer: probe briefly.
		probe, cancel := context.WithTimeout(ctx, 2*time.Second)
		req, _ := http.NewRequestWithContext(probe, http.MethodGet, s.URL+"/api/v1/version", nil)
		resp, err := s.client.Do(req)
		if err == nil {
			var v struct {
				Version string `json:"version"`
			}
			err = json.NewDecoder(resp.Body).Decode(&v)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK {
				cancel()
				s.Version = v.Version
				return nil
			}
		}
		cancel()
		// Gitea logs a failed bind and keeps running without a listener.
		if s.bindFailed() {
			return fmt.Errorf("starting Gitea on %s: %w", s.URL, errPortTaken)
		}
		select {
		case <-s.exited:
			return fmt.Errorf("gitea exited while starting: %w", s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("waiting for Gitea at %s: %w", s.URL, ctx.Err())
		case <-tick.C:
		}
	}
}

// api performs one JSON API request as user (basic auth with password) or,
// when password is empty, with the admin token. A non-2xx status is an
// error naming the status and Gitea's message.
func (s *Server) api(ctx context.Context, method, path string, in, out any, user, password string) error {
	var body io.Reader
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+"/api/v1"+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if password != "" {
		req.SetBasicAuth(user, password)
	} else {
		req.Header.Set("Authorization", "token "+s.Token)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return &HTTPError{Method: method, Path: path, StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(raw))}
	}
	if out != nil && len(raw) > 0 {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// HTTPError is a non-2xx answer of the Gitea API to a helper's request.
type HTTPError struct {
	Method, Path string
	StatusCode   int
	Body         string
}

// Error names the request, the status and Gitea's answer.
func (e *HTTPError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.Path, e.StatusCode, e.Body)
}

// createToken creates an API token with every scope for user.
func (s *Server) createToken(ctx context.Context, user, password string) (string, error) {
	var tok struct {
		SHA1 string `json:"sha1"`
	}
	in := map[string]any{"name": "pinbot-" + hexString(6), "scopes": []string{"all"}}
	if err := s.api(ctx, http.MethodPost, "/users/"+user+"/tokens", in, &tok, user, password); err != nil {
		return "", err
	}
	if tok.SHA1 == "" {
		return "", errors.New("gitea returned an empty token")
	}
	return tok.SHA1, nil
}

// Stop stops Gitea (SIGTERM, then SIGKILL after a grace period), waits for
// it to exit and removes the work directory if Start created it. It is safe
// to call more than once.
func (s *Server) Stop() error {
	s.stop.Do(func() {
		if s.cmd != nil && s.cmd.Process != nil {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.exited:
			case <-time.After(stopGrace):
				_ = s.cmd.Process.Kill()
				<-s.exited
			}
		}
		if s.removeD {
			s.stopErr = os.RemoveAll(s.Dir)
		}
	})
	return s.stopErr
}

// Running reports whether the Gitea process is still alive.
func (s *Server) Running() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// LogTail returns the last n lines of Gitea's output.
func (s *Server) LogTail(n int) string {
	raw, err := os.ReadFile(s.LogFile)
	if err != nil {
		return ""
	}
	return lastLines(string(raw), n)
}

// bindFailed reports whether this launch of Gitea logged that its port
// was taken.
func (s *Server) bindFailed() bool {
	raw, err := os.ReadFile(s.LogFile)
	if err != nil || int64(len(raw)) < s.logFrom {
		return false
	}
	return bytes.Contains(raw[s.logFrom:], []byte("address already in use"))
}

// withLog adds the tail of Gitea's output to a start-up error.
func (s *Server) withLog(err error) error {
	tail := s.LogTail(20)
	if tail == "" {
		return err
	}
	return fmt.Errorf("%w\n--- last lines of %s:\n%s", err, s.LogFile, tail)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func hexString(n int) string { return fmt.Sprintf("%x", random(n)) }
