// Command hollow-kubelet runs the real kubelet, as kubemark's hollow node
// does, with a fake container runtime and an image service of pinbot's own:
// the one part of a node that decides what status.containerStatuses[].imageID
// says.
//
// The kubelet code is Kubernetes' own (k8s.io/kubernetes/pkg/kubemark): its
// pull policy, its image manager, its pod workers and its status manager
// write the Pod status. Only the container runtime (kubelet's CRI fake) and
// the image service are not real. The image service resolves every pull
// against a real OCI registry with go-containerregistry, using the pull
// credentials the kubelet hands it from the Pod's imagePullSecrets, and
// answers with an image reference in the form a given runtime would report
// (an index resolves to the child for the node's platform, which is the
// host's: the kubelet reports runtime.GOOS and runtime.GOARCH as the Node's):
//
//	repo-digest      repo@sha256:<what the reference named>   (containerd, CRI-O)
//	platform-digest  repo@sha256:<the node platform's manifest>
//	config-digest    sha256:<the platform image's config>
//
// What the node has pulled it keeps, keyed by the reference as the Pod wrote
// it, so a tag moved in the registry after a pull is still the old image on
// this node until the kubelet's pull policy pulls again: the stale node of
// the field reports, played by the kubelet's own logic.
//
// There is no scheduler in the test cluster, so Pods reach a hollow node by
// spec.nodeName. Every address is on loopback and every file under
// --root-dir.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	remote "k8s.io/cri-client/pkg"
	fakeremote "k8s.io/cri-client/pkg/fake"
	"k8s.io/klog/v2"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubemark"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "hollow-kubelet:", err)
		os.Exit(1)
	}
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func run() error {
	var (
		kubeconfig = flag.String("kubeconfig", "", "kubeconfig of the API server the node joins")
		nodeName   = flag.String("name", "hollow-node", "name of the Node")
		rootDir    = flag.String("root-dir", "", "directory for everything the kubelet writes")
		port       = flag.Int("port", 0, "port of the kubelet's API on 127.0.0.1")
		form       = flag.String("image-id-form", "repo-digest", "how the image service names a pulled image: repo-digest, platform-digest or config-digest")
		labels     = flag.String("node-labels", "", "labels of the Node, as k=v,k=v")
		mirrors    listFlag
		insecure   listFlag
	)
	flag.Var(&mirrors, "mirror", "registry mirror as host=mirror-host, as a containerd hosts.toml would set it (repeatable)")
	flag.Var(&insecure, "insecure-registry", "registry host reached over plain HTTP (repeatable)")
	klog.InitFlags(nil)
	flag.Parse()

	if *kubeconfig == "" || *rootDir == "" || *port == 0 {
		return errors.New("--kubeconfig, --root-dir and --port are required")
	}
	images, err := newImageService(*form, mirrors, insecure)
	if err != nil {
		return err
	}
	nodeLabels, err := parseLabels(*labels)
	if err != nil {
		return fmt.Errorf("--node-labels: %w", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", *kubeconfig, err)
	}
	cfg.UserAgent = "hollow-kubelet"
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		return err
	}

	flags, conf := kubemark.GetHollowKubeletConfig(&kubemark.HollowKubeletOptions{
		NodeName:    *nodeName,
		KubeletPort: *port,
		MaxPods:     110,
		NodeLabels:  nodeLabels,
	})
	// Loopback and the root dir only: kubemark's defaults bind every
	// interface and write to /var/lib/kubelet and /tmp.
	flags.RootDirectory = *rootDir
	flags.CertDirectory = filepath.Join(*rootDir, "pki")
	conf.Address = "127.0.0.1"
	conf.ReadOnlyPort = 0
	conf.HealthzPort = 0
	conf.StaticPodPath = filepath.Join(*rootDir, "static-pods")
	conf.PodLogsDir = filepath.Join(*rootDir, "pod-logs")
	// Report status changes promptly; the tests wait on them.
	conf.SyncFrequency.Duration = 2 * time.Second
	conf.NodeStatusUpdateFrequency.Duration = 2 * time.Second
	for _, dir := range []string{flags.CertDirectory, conf.StaticPodPath, conf.PodLogsDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}

	heartbeat := *cfg
	heartbeat.Timeout = conf.NodeStatusUpdateFrequency.Duration
	heartbeat.QPS = -1
	heartbeatClient, err := clientset.NewForConfig(&heartbeat)
	if err != nil {
		return err
	}

	endpoint := "unix://" + filepath.Join(*rootDir, "runtime.sock")
	runtime := fakeremote.NewFakeRemoteRuntime()
	if err := runtime.Start(endpoint); err != nil {
		return fmt.Errorf("fake runtime: %w", err)
	}
	defer runtime.Stop()
	runtimeService, err := remote.NewRemoteRuntimeServiceBuilder().
		WithEndpoint(endpoint).
		WithConnectionTimeout(15 * time.Second).
		Build(ctx)
	if err != nil {
		return fmt.Errorf("runtime service: %w", err)
	}

	node := kubemark.NewHollowKubelet(flags, conf, client, heartbeatClient,
		&cadvisortest.Fake{NodeName: *nodeName}, images, runtimeService, cm.NewStubContainerManager())
	go node.Run(ctx)
	<-ctx.Done()
	return nil
}

func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	if s == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}
