package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
)

func init() { register("scale", benchScale) }

// The scale measurements (issue 22): one `pinbot serve` verifying 1,000
// Argo CD Applications it discovers by label, half on the hub and half on
// a spoke (a second control plane with its own node), 3 Pods each.
const (
	scaleApps       = 1000
	scaleReplicas   = 3
	scaleNamespaces = 20 // per cluster
	scaleEvents     = 20 // Pod events timed
	// scaleMemoryLimit is the replica's soft memory limit: what
	// --memory-limit auto sets in a container limited to 154Mi, the size
	// docs/operations.md gives for a thousand apps.
	scaleMemoryLimit = "90Mi"
	scaleSettle      = 30 * time.Second
	scaleWindow      = 60 * time.Second
)

var applicationsGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}

// scaleBench is the two clusters of the scale measurements.
type scaleBench struct {
	*recBench
	spoke     *kube.Cluster
	spokeKube kubernetes.Interface
	image     string // repo@digest every Pod runs
	commit    string
}

// benchScale measures, on the hub and a spoke with 3,000 Pods between
// them: the time from serve's start to all 1,000 apps verified, its idle
// RSS, its API requests per idle minute on both clusters, and its passes
// after a Pod event.
func benchScale(ctx context.Context, r *report) error {
	started := time.Now()
	rb, done, err := startRecBench(ctx, "scale")
	defer done()
	if err != nil {
		return err
	}
	b := &scaleBench{recBench: rb}
	stopSpoke, err := b.startSpoke(ctx)
	defer stopSpoke()
	if err != nil {
		return err
	}
	if err := b.populate(ctx); err != nil {
		return err
	}
	fmt.Printf("   hub and spoke, %d Deployments and %d Pods running, in %v\n",
		scaleApps, scaleApps*scaleReplicas, time.Since(started).Round(time.Second))
	return b.measure(ctx, r)
}

// startSpoke starts the spoke's control plane and node, which pulls from
// the hub's Gitea registry.
func (b *scaleBench) startSpoke(ctx context.Context) (func(), error) {
	sp, err := kube.Start(ctx, kube.Options{})
	if err != nil {
		return func() {}, fmt.Errorf("starting the spoke: %w", err)
	}
	node := kubeletsim.New(sp.Config(), kubeletsim.WithNodeName("spoke-node"), kubeletsim.WithPullBackoff(time.Second),
		kubeletsim.WithBasicAuth(b.gitea.RegistryHost, b.gitea.AdminUser, b.gitea.Token))
	stop := func() {
		node.Stop()
		_ = sp.Stop()
	}
	if err := node.Start(ctx); err != nil {
		return stop, fmt.Errorf("starting the spoke's node: %w", err)
	}
	b.spoke = sp
	b.spokeKube, err = kubernetes.NewForConfig(sp.Config())
	return stop, err
}

// appName is app i's name: its Application, its directory and its
// Deployment. Even apps run on the hub, odd ones on the spoke.
func appName(i int) string { return fmt.Sprintf("a%04d", i) }

func appNamespace(i int) string { return fmt.Sprintf("team-%02d", (i/2)%scaleNamespaces) }

// populate pushes the image and the manifests (one directory per app),
// creates the namespaces, the Deployments as Argo CD would have applied
// them, the spoke's cluster Secret and the Applications, synced, and
// waits until every Pod runs.
func (b *scaleBench) populate(ctx context.Context) error {
	refs, err := b.pushImages("scale", 1)
	if err != nil {
		return err
	}
	b.image = byDigest(refs[0])
	dir := filepath.Join(b.tmp, "manifests")
	for i := range scaleApps {
		d := filepath.Join(dir, "apps", appName(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(d, "deploy.yaml"), []byte(scaleDeploymentYAML(appName(i), b.image)), 0o644); err != nil {
			return err
		}
	}
	if b.commit, err = b.gitea.CreateRepoFromDir(ctx, b.owner, "scale", "main", dir); err != nil {
		return err
	}
	clusters := []kubernetes.Interface{b.kube, b.spokeKube}
	if err := b.argoTeams(ctx, clusters, scaleNamespaces); err != nil {
		return err
	}
	if err := parallel(ctx, scaleApps, 8, func(i int) error {
		_, err := clusters[i%2].AppsV1().Deployments(appNamespace(i)).Create(ctx, scaleDeployment(appName(i), b.image), metav1.CreateOptions{FieldManager: "argocd-controller"})
		return err
	}); err != nil {
		return fmt.Errorf("creating the Deployments: %w", err)
	}
	if err := b.clusterSecret(ctx, b.spoke.Config().Host, b.spoke.Config().BearerToken, b.spoke.Config().CAData); err != nil {
		return err
	}
	if err := parallel(ctx, scaleApps, 8, func(i int) error {
		_, err := b.dyn.Resource(applicationsGVR).Namespace("argocd").Create(ctx, b.application(i), metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating the Applications: %w", err)
	}
	_, err = benchPoll(ctx, 15*time.Minute, "every Pod running", func() bool {
		n := 0
		for _, k := range clusters {
			pods, err := k.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false
			}
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].ImageID != "" {
					n++
				}
			}
		}
		if n < scaleApps*scaleReplicas {
			time.Sleep(time.Second)
		}
		return n == scaleApps*scaleReplicas
	})
	return err
}

// clusterSecret writes Argo CD's cluster Secret of the spoke, named
// "spoke", reaching server.
func (b *scaleBench) clusterSecret(ctx context.Context, server, token string, ca []byte) error {
	conf, err := json.Marshal(map[string]any{"bearerToken": token, "tlsClientConfig": map[string]any{"caData": ca}})
	if err != nil {
		return err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-spoke", Namespace: "argocd", Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
		StringData: map[string]string{"name": "spoke", "server": server, "config": string(conf)},
	}
	if _, err := b.kube.CoreV1().Secrets("argocd").Update(ctx, s, metav1.UpdateOptions{}); err == nil {
		return nil
	}
	_, err = b.kube.CoreV1().Secrets("argocd").Create(ctx, s, metav1.CreateOptions{})
	return err
}

// application is app i's Application, labelled for discovery, synced
// at the commit as Argo CD reports it.
func (b *scaleBench) application(i int) *unstructured.Unstructured {
	dest := map[string]any{"server": "https://kubernetes.default.svc", "namespace": appNamespace(i)}
	if i%2 == 1 {
		dest = map[string]any{"name": "spoke", "namespace": appNamespace(i)}
	}
	return syncedApplication(appName(i), "bench=scale", b.gitea.RepoURL(b.owner, "scale"), "apps/"+appName(i), dest, appName(i), b.commit)
}

// syncedApplication is Application name, labelled with label (k=v) for
// serve's discovery, whose source is path of repoURL, synced at commit as
// Argo CD reports it, with one resource: Deployment deployment in dest's
// namespace.
func syncedApplication(name, label, repoURL, path string, dest map[string]any, deployment, commit string) *unstructured.Unstructured {
	k, v, _ := strings.Cut(label, "=")
	now := time.Now().UTC().Format(time.RFC3339)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "Application",
		"metadata":   map[string]any{"name": name, "namespace": "argocd", "labels": map[string]any{k: v}},
		"spec": map[string]any{
			"project":     "default",
			"source":      map[string]any{"repoURL": repoURL, "path": path, "targetRevision": "main"},
			"destination": dest,
		},
		"status": map[string]any{
			"reconciledAt": now,
			"operationState": map[string]any{
				"operation": map[string]any{"sync": map[string]any{"revision": commit}},
				"phase":     "Succeeded", "startedAt": now, "finishedAt": now,
				"syncResult": map[string]any{"revision": commit},
			},
			"history": []any{map[string]any{"id": int64(0), "revision": commit, "deployedAt": now}},
			"health":  map[string]any{"status": "Healthy"},
			"sync":    map[string]any{"status": "Synced", "revision": commit},
			"resources": []any{map[string]any{"group": "apps", "version": "v1", "kind": "Deployment",
				"namespace": dest["namespace"], "name": deployment, "status": "Synced", "health": map[string]any{"status": "Healthy"}}},
		},
	}}
}

func scaleDeploymentYAML(name, image string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: %[3]d
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      containers:
        - name: app
          image: %[2]s
`, name, image, scaleReplicas)
}

func scaleDeployment(name, image string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(scaleReplicas)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}
}

// parallel runs do(0..n-1) on workers goroutines; the first error wins.
func parallel(ctx context.Context, n, workers int, do func(i int) error) error {
	next := make(chan int)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := do(i); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("item %d: %w", i, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(first, ctx.Err())
}

// argoTeams creates the namespaces team-00 … on each of clusters, and on
// the hub the argocd namespace and Argo CD's Application CRD.
func (b *recBench) argoTeams(ctx context.Context, clusters []kubernetes.Interface, teams int) error {
	for _, k := range clusters {
		for n := range teams {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("team-%02d", n)}}
			if _, err := k.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
	}
	if _, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "argocd"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	crd, err := kube.CRDFile(kube.ApplicationCRD)
	if err != nil {
		return err
	}
	return b.cluster.InstallCRDs(ctx, crd)
}
