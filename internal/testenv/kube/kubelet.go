package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The forms in which a HollowKubelet's image service names what it pulled,
// and so what status.containerStatuses[].imageID says.
const (
	// RepoDigest is repo@sha256:<digest of what the Pod referenced>: an
	// index's own digest for an index, as containerd and CRI-O report it.
	RepoDigest = "repo-digest"
	// PlatformDigest is repo@sha256:<the node platform's manifest>, the
	// child of an index.
	PlatformDigest = "platform-digest"
	// ConfigDigest is a bare sha256:<config digest>.
	ConfigDigest = "config-digest"
)

// KubeletOptions configure a HollowKubelet. Its platform is the host's:
// the kubelet reports runtime.GOOS and runtime.GOARCH as the Node's, and
// the image service pulls an index's child for it.
type KubeletOptions struct {
	// Node is the Node's name. Pods reach it by spec.nodeName: the test
	// cluster runs no scheduler.
	Node string
	// ImageIDForm is RepoDigest (the default), PlatformDigest or
	// ConfigDigest.
	ImageIDForm string
	// Mirrors sends pulls for a registry host to a mirror host, as a
	// containerd hosts.toml would; imageIDs keep the name the Pod used.
	Mirrors map[string]string
	// Labels are the Node's labels.
	Labels map[string]string
}

// HollowKubelet is the real kubelet with a fake container runtime and
// pinbot's image service (`make kubelet`), joined to a Cluster as a Node.
// The kubelet's own pull policy, image manager and status manager write
// its Pods' status. Stop it when done.
type HollowKubelet struct {
	// Node is the Node's name.
	Node string
	// Log is the kubelet's log file, under the cluster's Dir.
	Log string

	procGroup
}

// StartHollowKubelet runs bin/hollow-kubelet against the cluster, on
// loopback and under the cluster's Dir, until its Node is Ready.
func (c *Cluster) StartHollowKubelet(ctx context.Context, opts KubeletOptions) (*HollowKubelet, error) {
	bin, err := findBinDir("")
	if err != nil {
		return nil, err
	}
	exe := filepath.Join(bin, "hollow-kubelet")
	if _, err := os.Stat(exe); err != nil {
		return nil, fmt.Errorf("finding hollow-kubelet in %s: %w (run `make kubelet` to build it)", bin, err)
	}
	if opts.Node == "" {
		return nil, errors.New("KubeletOptions.Node is empty")
	}
	form := opts.ImageIDForm
	if form == "" {
		form = RepoDigest
	}
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(c.Dir, "kubelet-"+opts.Node)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("creating the kubelet's root dir: %w", err)
	}
	args := []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--name=" + opts.Node,
		"--root-dir=" + root,
		"--port=" + strconv.Itoa(ports[0]),
		"--image-id-form=" + form,
		"--node-labels=" + joinLabels(opts.Labels),
	}
	for host, mirror := range opts.Mirrors {
		args = append(args, "--mirror="+host+"="+mirror)
	}
	k := &HollowKubelet{Node: opts.Node, Log: filepath.Join(c.Dir, "kubelet-"+opts.Node+".log")}
	p, err := startProcess("hollow-kubelet "+opts.Node, exe, k.Log, args)
	if err != nil {
		return nil, err
	}
	k.procs = append(k.procs, p)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := c.waitNodeReady(ctx, opts.Node, p); err != nil {
		return nil, errors.Join(fmt.Errorf("%w\n%s", err, tail(k.Log, 30)), k.Stop())
	}
	return k, nil
}

func joinLabels(labels map[string]string) string {
	kv := make([]string, 0, len(labels))
	for k, v := range labels {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

// waitNodeReady polls until Node name reports Ready, failing early when p
// exits.
func (c *Cluster) waitNodeReady(ctx context.Context, name string, p *process) error {
	client, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	last := "not registered"
	for {
		if err := p.exited(); err != nil {
			return err
		}
		node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			last = "registered, not Ready"
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					return nil
				}
				if cond.Type == corev1.NodeReady {
					last = fmt.Sprintf("Ready=%s: %s", cond.Status, cond.Message)
				}
			}
		case !apierrors.IsNotFound(err) && ctx.Err() == nil:
			return fmt.Errorf("getting Node %s: %w", name, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for Node %s to be Ready (%s): %w", name, last, ctx.Err())
		case <-tick.C:
		}
	}
}
