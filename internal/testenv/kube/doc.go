// Package kube runs a real Kubernetes control plane on loopback for pinbot's
// tests, `make demo` and `make bench`: etcd, kube-apiserver and
// kube-controller-manager, built from source into bin/ by `make kube`.
//
// There is no kubelet and no scheduler; pinbot.dev/pinbot/internal/testenv/kubeletsim
// plays the node. Start returns once the API server is ready and the
// controller manager has created the default ServiceAccount, so Pods can be
// created straight away.
//
//	c, err := kube.Start(ctx, kube.Options{})
//	if err != nil { ... }
//	defer c.Stop()
//	client := kubernetes.NewForConfigOrDie(c.Config())
//
// The package is test support code but does not import "testing", so
// programs can use it too.
package kube
