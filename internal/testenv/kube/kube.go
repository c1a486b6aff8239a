package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// AdminUser is the user name of the admin credentials Config and the
// Kubeconfig file carry. It is in the system:masters group.
const AdminUser = "pinbot-admin"

// DefaultControllers are the kube-controller-manager controllers Start runs
// unless Options.Controllers says otherwise: the workload controllers, the
// garbage collector, namespace deletion, and the service-account
// controllers without which no Pod can be created.
var DefaultControllers = []string{
	"deployment", "replicaset", "statefulset", "daemonset", "job", "cronjob",
	"garbagecollector", "namespace", "serviceaccount", "serviceaccount-token",
	"root-ca-cert-publisher",
}

// Options configures Start. The zero value is ready to use.
type Options struct {
	// BinDir holds etcd, kube-apiserver and kube-controller-manager.
	// Default: $PINBOT_BIN_DIR, else bin/ of the pinbot module found by
	// walking up from the working directory.
	BinDir string
	// Dir holds the data, keys, kubeconfigs and logs. Default: a new
	// temporary directory that Stop removes. A Dir given here is kept.
	Dir string
	// StartTimeout bounds start-up. Default 2 minutes.
	StartTimeout time.Duration
	// Users are extra token-authenticated users, for tests of RBAC. They
	// have no permissions beyond what their Groups grant.
	Users []User
	// Controllers replaces DefaultControllers.
	Controllers []string
	// APIServerFlags and ControllerManagerFlags are appended to the
	// components' command lines.
	APIServerFlags, ControllerManagerFlags []string
}

// User is a bearer-token user of the API server.
type User struct {
	Name   string
	Groups []string
}

// Logs names the component log files.
type Logs struct {
	Etcd, APIServer, ControllerManager string
}

// Cluster is a running control plane. Stop it when done.
type Cluster struct {
	// Host is the API server URL, https://127.0.0.1:<port>.
	Host string
	// Kubeconfig is the path of a kubeconfig file with the admin
	// credentials, for --kubeconfig.
	Kubeconfig string
	// Dir holds everything the cluster writes.
	Dir string
	// Logs are the component log files, under Dir.
	Logs Logs
	// StartupTime is how long Start took.
	StartupTime time.Duration

	pki     *pki
	procs   []*process // in start order
	manager *process   // kube-controller-manager, for PauseControllers
	tempDir bool
	stop    sync.Once
	stopErr error
}

// Start runs etcd, kube-apiserver and kube-controller-manager on free
// loopback ports and returns when the API server is ready and the default
// ServiceAccount exists. On failure it stops whatever it started and the
// error carries the tail of the failing component's log. ctx bounds only
// start-up; the cluster runs until Stop.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	begin := time.Now()
	bin, err := findBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	timeout := opts.StartTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	// A free port can be taken by another test package between our probe
	// and the component's bind; such an attempt is retried on new ports.
	var c *Cluster
	for attempt := 1; ; attempt++ {
		c, err = startOnce(ctx, bin, opts)
		if err == nil || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	c.StartupTime = time.Since(begin)
	return c, nil
}

func startOnce(ctx context.Context, bin string, opts Options) (*Cluster, error) {
	c := &Cluster{Dir: opts.Dir}
	if c.Dir == "" {
		var err error
		c.Dir, err = os.MkdirTemp("", "pinbot-kube-")
		if err != nil {
			return nil, fmt.Errorf("creating cluster directory: %w", err)
		}
		c.tempDir = true
	} else if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating cluster directory %s: %w", c.Dir, err)
	} else if err := os.RemoveAll(filepath.Join(c.Dir, "etcd")); err != nil {
		// A failed attempt may have left etcd's data behind.
		return nil, fmt.Errorf("clearing cluster directory %s: %w", c.Dir, err)
	}
	if err := c.start(ctx, bin, opts); err != nil {
		if stopErr := c.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, bin string, opts Options) error {
	c.Logs = Logs{
		Etcd:              filepath.Join(c.Dir, "etcd.log"),
		APIServer:         filepath.Join(c.Dir, "kube-apiserver.log"),
		ControllerManager: filepath.Join(c.Dir, "kube-controller-manager.log"),
	}
	var err error
	if c.pki, err = writePKI(c.Dir, opts.Users); err != nil {
		return err
	}
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	c.Host = "https://127.0.0.1:" + strconv.Itoa(ports[2])

	etcd, err := startProcess("etcd", filepath.Join(bin, "etcd"), c.Logs.Etcd, []string{
		"--name=pinbot",
		"--data-dir=" + filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=pinbot=" + peerURL,
		"--unsafe-no-fsync",
		"--log-level=warn",
	})
	if err != nil {
		return err
	}
	c.procs = append(c.procs, etcd)

	// The API server retries etcd until it answers, so both start at once.
	apiserver, err := startProcess("kube-apiserver", filepath.Join(bin, "kube-apiserver"), c.Logs.APIServer, append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(ports[2]),
		// It refuses a loopback advertise address otherwise.
		"--endpoint-reconciler-type=none",
		"--cert-dir=" + filepath.Join(c.Dir, "pki"),
		"--tls-cert-file=" + c.pki.certFile,
		"--tls-private-key-file=" + c.pki.keyFile,
		"--token-auth-file=" + c.pki.tokenFile,
		"--service-account-key-file=" + c.pki.saKeyFile,
		"--service-account-signing-key-file=" + c.pki.saKeyFile,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--authorization-mode=RBAC",
		// An API value only: nothing routes there.
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		// Nothing to be fair among in a test; it also starts faster.
		"--enable-priority-and-fairness=false",
		"--profiling=false",
	}, opts.APIServerFlags...))
	if err != nil {
		return err
	}
	c.procs = append(c.procs, apiserver)

	hc, err := c.healthClient()
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, hc, c.Host+"/healthz", c.pki.adminToken, etcd, apiserver); err != nil {
		return err
	}

	if c.Kubeconfig, err = c.writeKubeconfig(filepath.Join(c.Dir, "kubeconfig"), AdminUser, c.pki.adminToken); err != nil {
		return err
	}
	managerKubeconfig, err := c.writeKubeconfig(filepath.Join(c.Dir, "kube-controller-manager.kubeconfig"), controllerManagerUser, c.pki.managerToken)
	if err != nil {
		return err
	}
	controllers := opts.Controllers
	if len(controllers) == 0 {
		controllers = DefaultControllers
	}
	manager, err := startProcess("kube-controller-manager", filepath.Join(bin, "kube-controller-manager"), c.Logs.ControllerManager, append([]string{
		"--kubeconfig=" + managerKubeconfig,
		"--controllers=" + strings.Join(controllers, ","),
		"--service-account-private-key-file=" + c.pki.saKeyFile,
		"--root-ca-file=" + c.pki.caFile,
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		// No serving: readiness is judged by the work it does.
		"--secure-port=0",
		// The defaults (20/30) make a 1,000-replica rollout crawl.
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
		"--profiling=false",
	}, opts.ControllerManagerFlags...))
	if err != nil {
		return err
	}
	c.procs = append(c.procs, manager)
	c.manager = manager

	if err := waitHTTP(ctx, hc, c.Host+"/readyz", c.pki.adminToken, c.procs...); err != nil {
		return err
	}
	return c.waitDefaultServiceAccount(ctx)
}

// PauseControllers stops kube-controller-manager (SIGSTOP) until the
// returned resume is called (SIGCONT): the API server keeps serving, but
// no controller acts, so a Deployment's observedGeneration stays behind
// its generation. It runs with --leader-elect=false, so a pause loses no
// lease.
func (c *Cluster) PauseControllers() (resume func() error, err error) {
	p := c.manager.cmd.Process
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("pausing kube-controller-manager (pid %d): %w", p.Pid, err)
	}
	return func() error {
		if err := p.Signal(syscall.SIGCONT); err != nil {
			return fmt.Errorf("resuming kube-controller-manager (pid %d): %w", p.Pid, err)
		}
		return nil
	}, nil
}

// Config returns a new copy of the admin client configuration (bearer
// token, system:masters).
func (c *Cluster) Config() *rest.Config {
	return c.restConfig(c.pki.adminToken)
}

// ServingPair returns the files of the API server's serving certificate
// and key (valid for 127.0.0.1), for a proxy that poses as the API server.
func (c *Cluster) ServingPair() (certFile, keyFile string) {
	return c.pki.certFile, c.pki.keyFile
}

// UserConfig returns the client configuration of a user from
// Options.Users.
func (c *Cluster) UserConfig(name string) (*rest.Config, error) {
	tok, ok := c.pki.tokens[name]
	if !ok {
		return nil, fmt.Errorf("user %q was not in Options.Users", name)
	}
	return c.restConfig(tok), nil
}

// UserKubeconfig writes a kubeconfig file for a user from Options.Users
// under Dir and returns its path.
func (c *Cluster) UserKubeconfig(name string) (string, error) {
	tok, ok := c.pki.tokens[name]
	if !ok {
		return "", fmt.Errorf("user %q was not in Options.Users", name)
	}
	return c.writeKubeconfig(filepath.Join(c.Dir, "kubeconfig-"+name), name, tok)
}

func (c *Cluster) restConfig(token string) *rest.Config {
	return &rest.Config{
		Host:            c.Host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), c.pki.caPEM...)},
		QPS:             200,
		Burst:           400,
	}
}

// Tail returns the last n lines of each component's log, labelled, for a
// failure message.
func (c *Cluster) Tail(n int) string { return tailAll(c.procs, n) }

// Stop terminates the components (SIGTERM, then SIGKILL after a grace
// period) in reverse start order and removes Dir if Start created it. It is
// safe to call more than once.
func (c *Cluster) Stop() error {
	c.stop.Do(func() {
		var errs []error
		for i := len(c.procs) - 1; i >= 0; i-- {
			if err := c.procs[i].stop(10 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		if c.tempDir {
			if err := os.RemoveAll(c.Dir); err != nil {
				errs = append(errs, fmt.Errorf("removing %s: %w", c.Dir, err))
			}
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}
