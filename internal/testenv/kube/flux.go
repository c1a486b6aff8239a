package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The CRDs of every kind Flux's source-controller and kustomize-controller
// watch: a controller whose kind has no CRD never starts.
var fluxCRDs = []string{
	KustomizationCRD, GitRepositoryCRD, HelmRepositoryCRD, OCIRepositoryCRD,
	BucketCRD, HelmChartCRD, ExternalArtifactCRD,
}

// FluxNamespace is where StartFlux's controllers say they run
// (RUNTIME_NAMESPACE), as flux install puts them.
const FluxNamespace = "flux-system"

// Flux is the real Flux source-controller and kustomize-controller
// (`make flux`) running against a Cluster, out of cluster, as the
// cluster's admin. Stop it when done.
type Flux struct {
	// Logs are the controllers' log files, under the cluster's Dir.
	Logs struct{ Source, Kustomize string }

	procGroup
}

// StartFlux installs Flux's CRDs and the flux-system namespace and runs
// source-controller and kustomize-controller from bin/, every address on
// loopback (their defaults bind all interfaces and collide with each
// other), until both answer their readiness probe. The source-controller
// serves its artifacts on loopback, where kustomize-controller fetches
// them.
func (c *Cluster) StartFlux(ctx context.Context) (*Flux, error) {
	bin, err := findBinDir("")
	if err != nil {
		return nil, err
	}
	for _, b := range []string{"source-controller", "kustomize-controller"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return nil, fmt.Errorf("finding %s in %s: %w (run `make flux` to build Flux's controllers)", b, bin, err)
		}
	}
	if err := c.InstallNamedCRDs(ctx, fluxCRDs...); err != nil {
		return nil, err
	}
	if err := c.ensureNamespace(ctx, FluxNamespace); err != nil {
		return nil, err
	}
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	addr := func(i int) string { return "127.0.0.1:" + strconv.Itoa(ports[i]) }
	storage := filepath.Join(c.Dir, "flux-artifacts")
	if err := os.MkdirAll(storage, 0o700); err != nil {
		return nil, fmt.Errorf("creating Flux's artifact storage: %w", err)
	}
	f := &Flux{}
	f.Logs.Source = filepath.Join(c.Dir, "source-controller.log")
	f.Logs.Kustomize = filepath.Join(c.Dir, "kustomize-controller.log")
	env := []string{"KUBECONFIG=" + c.Kubeconfig, "RUNTIME_NAMESPACE=" + FluxNamespace}
	common := []string{"--log-level=debug", "--events-addr=", "--watch-all-namespaces=true", "--min-retry-delay=250ms", "--max-retry-delay=5s"}

	src, err := startProcessEnv("source-controller", filepath.Join(bin, "source-controller"), f.Logs.Source, env, append([]string{
		"--storage-path=" + storage,
		"--storage-addr=" + addr(0),
		"--storage-adv-addr=" + addr(0),
		"--metrics-addr=" + addr(1),
		"--health-addr=" + addr(2),
	}, common...))
	if err != nil {
		return nil, err
	}
	f.procs = append(f.procs, src)
	kus, err := startProcessEnv("kustomize-controller", filepath.Join(bin, "kustomize-controller"), f.Logs.Kustomize, env, append([]string{
		"--metrics-addr=" + addr(3),
		"--health-addr=" + addr(4),
	}, common...))
	if err != nil {
		return nil, errors.Join(err, f.Stop())
	}
	f.procs = append(f.procs, kus)

	hc := &http.Client{Timeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, probe := range []string{addr(2), addr(4)} {
		if err := waitHTTP(ctx, hc, "http://"+probe+"/readyz", "", f.procs...); err != nil {
			return nil, errors.Join(err, f.Stop())
		}
	}
	return f, nil
}

// ensureNamespace creates namespace name unless it exists.
func (c *Cluster) ensureNamespace(ctx context.Context, name string) error {
	client, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}
