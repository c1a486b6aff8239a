// Package stack starts every peer pinbot's end-to-end checks need, at
// once: a Gitea (Git, API and its container registry), a control plane
// (etcd, kube-apiserver, kube-controller-manager) and one simulated node
// that pulls images from that registry. The reconciler's scenario tests,
// the CLI's end-to-end tests and `make bench` share it.
//
// It does not import "testing": callers fail or skip as suits them.
package stack

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
)

// DefaultNamespaces are created once the control plane is up: pinbot's
// own, where the reconciler keeps its history.
var DefaultNamespaces = []string{"pinbot-system"}

// Options configures Start. The zero value is ready to use.
type Options struct {
	// Node options come after the registry credentials Start sets, so
	// they may override them (a node name, a platform, a pull backoff).
	Node []kubeletsim.Option
	// Namespaces to create. Default DefaultNamespaces.
	Namespaces []string
	// Kube starts the control plane (its flags, for one).
	Kube kube.Options
}

// Stack is the running peers. Stop it when done.
type Stack struct {
	Gitea   *gitea.Server
	Cluster *kube.Cluster
	Node    *kubeletsim.Sim
	// Kube is an admin client of the control plane.
	Kube kubernetes.Interface

	stops []func()
}

// Start starts Gitea and the control plane side by side, then the node,
// which reads Gitea's registry with the admin's token. On error it stops
// whatever it started.
func Start(ctx context.Context, opts Options) (*Stack, error) {
	s := &Stack{}
	type started struct {
		g   *gitea.Server
		err error
	}
	gch := make(chan started, 1)
	go func() {
		g, err := gitea.Start(ctx, gitea.Options{})
		gch <- started{g, err}
	}()
	c, kerr := kube.Start(ctx, opts.Kube)
	g := <-gch
	if g.g != nil {
		s.Gitea = g.g
		s.stops = append(s.stops, func() { _ = g.g.Stop() })
	}
	if c != nil {
		s.Cluster = c
		s.stops = append(s.stops, func() { _ = c.Stop() })
	}
	if err := errors.Join(kerr, g.err); err != nil {
		s.Stop()
		return nil, fmt.Errorf("starting the peers: %w", err)
	}
	var err error
	if s.Kube, err = kubernetes.NewForConfig(c.Config()); err != nil {
		s.Stop()
		return nil, err
	}
	namespaces := opts.Namespaces
	if namespaces == nil {
		namespaces = DefaultNamespaces
	}
	for _, n := range namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}
		if _, err := s.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			s.Stop()
			return nil, fmt.Errorf("creating namespace %s: %w", n, err)
		}
	}
	nodeOpts := append([]kubeletsim.Option{kubeletsim.WithBasicAuth(s.Gitea.RegistryHost, s.Gitea.AdminUser, s.Gitea.Token)}, opts.Node...)
	s.Node = kubeletsim.New(c.Config(), nodeOpts...)
	if err := s.Node.Start(ctx); err != nil {
		s.Stop()
		return nil, fmt.Errorf("starting the simulated node: %w", err)
	}
	s.stops = append(s.stops, s.Node.Stop)
	return s, nil
}

// Stop stops the node, the control plane and Gitea, in that order. It is
// safe to call more than once.
func (s *Stack) Stop() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
	s.stops = nil
}
