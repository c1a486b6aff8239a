package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/internal/memlimit"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/kubeletsim"
	"pinbot.dev/pinbot/reconciler/object"
)

// The fleet measurements (issue 39): 10,000 apps over 2 control planes,
// 3 Pods each, passed by 4 serve replicas that shard them by app. The
// record attempt runs the same at 50,000 apps over 5 control planes, by
// name only (-run fleet-record).
func init() {
	register("fleet", func(ctx context.Context, r *report) error { return benchFleet(ctx, r, fleetOf10k) })
	registerByName("fleet-record", func(ctx context.Context, r *report) error { return benchFleet(ctx, r, fleetRecord) })
	registerByName("fleet-small", func(ctx context.Context, r *report) error { return benchFleet(ctx, r, fleetSmall) })
	registerByName("fleet-tight", func(ctx context.Context, r *report) error { return benchFleet(ctx, r, fleetTight) })
}

// fleetShape is the size of one fleet run.
type fleetShape struct {
	name     string
	apps     int
	clusters int // the hub and clusters-1 spokes
	replicas int // serve replicas
	shards   int
	// container is the replicas' container memory: what a replica of
	// this fleet needs (docs/operations.md), since each watches every Pod
	// of the apps' namespaces. Under the chart's default 256Mi the 10,000
	// apps' live heap would be OOM-killed, and a soft limit below the
	// live heap spends up to half a core collecting. The replicas run
	// with the --memory-limit auto would set under it
	// (fleetBench.memoryLimit).
	container uint64
}

// patience is how long the run waits for what takes d at 10,000 apps:
// longer in proportion for a larger fleet, so that the record attempt
// reports a slow figure instead of giving up.
func (s fleetShape) patience(d time.Duration) time.Duration {
	return d * time.Duration(max(1, s.apps/10_000))
}

var (
	fleetOf10k = fleetShape{name: "fleet", apps: 10_000, clusters: 2, replicas: 4, shards: 8, container: 512 << 20}
	// fleetRecord's replicas each hold five times the apps and Pods of
	// fleetOf10k's, in five times the container.
	fleetRecord = fleetShape{name: "fleet-record", apps: 50_000, clusters: 5, replicas: 4, shards: 8, container: 5 * 512 << 20}
	// fleetTight is fleetOf10k in containers sized for the memory
	// targets rather than for the start: `auto` sets a soft limit of
	// about 175 MiB, half again the largest share's idle live heap
	// (about 120 MB at 2,750 apps), so that the collector, not GOGC's
	// doubling, bounds the idle and the busy minute. It measures what
	// that sizing costs the start and the failover.
	fleetTight = fleetShape{name: "fleet-tight", apps: 10_000, clusters: 2, replicas: 4, shards: 8, container: 288 << 20}
	// fleetSmall is a quick run of the same measurements.
	fleetSmall = fleetShape{name: "fleet-small", apps: 1_000, clusters: 2, replicas: 4, shards: 8, container: 512 << 20}
)

const (
	fleetAppPods    = scaleReplicas // per app, as scaleDeployment makes them
	fleetNamespaces = 20            // per cluster
	// Every fleetOwnEvery-th app is pinbot's own (an apps: entry it
	// syncs), on the hub; the rest are Argo CD Applications it verifies.
	fleetOwnEvery = 10
	// The Lease timings: a dead replica's shards move after 15 s, and
	// each Lease is renewed every 5 s, so that a replica's idle requests
	// (its member Lease, the survey, the leader's Lease and one shard's)
	// stay under one a second.
	fleetLease, fleetRenew, fleetRetry = "15s", "10s", "5s"
	fleetMerges                        = 5
	fleetOwnRepo                       = "fleet-own"
)

// fleetBench is the clusters, the repository and the replicas of a run.
type fleetBench struct {
	*recBench
	shape    fleetShape
	clusters []*kube.Cluster // [0] is the hub
	kubes    []kubernetes.Interface
	proxies  []*httptest.Server
	counters []*apiCounter
	images   []string // repo@digest: v0 runs first, v1 is merged
	commit   string
	statuses *fleetStatuses
	replicas []*recChild
	// idleWorst is the largest replica's idle RSS after the start.
	idleWorst int64
	addrs     []string
	pprof     string   // the first replica's --pprof-listen
	pprofs    []string // every replica's
}

// own reports whether app i is pinbot's own; the others are Argo CD's.
func (fleetBench) own(i int) bool { return i%fleetOwnEvery == 0 }

func (b *fleetBench) clusterOf(i int) int { return i % b.shape.clusters }

func (b *fleetBench) namespace(i int) string {
	return fmt.Sprintf("team-%02d", (i/b.shape.clusters)%fleetNamespaces)
}

func fleetName(i int) string { return fmt.Sprintf("f%05d", i) }

func benchFleet(ctx context.Context, r *report, shape fleetShape) error {
	started := time.Now()
	rb, done, err := startRecBench(ctx, shape.name)
	defer done()
	if err != nil {
		return err
	}
	b := &fleetBench{recBench: rb, shape: shape, clusters: []*kube.Cluster{rb.cluster}, kubes: []kubernetes.Interface{rb.kube}}
	stopSpokes, err := b.startSpokes(ctx)
	defer stopSpokes()
	if err != nil {
		return err
	}
	fmt.Printf("   %d control planes up in %v\n", shape.clusters, time.Since(started).Round(time.Second))
	if err := b.populate(ctx); err != nil {
		return err
	}
	fmt.Printf("   %s apps, %s Pods running, in %v\n", thousands(shape.apps), thousands(shape.apps*fleetAppPods), time.Since(started).Round(time.Second))
	defer func() {
		for _, p := range b.proxies {
			p.Close()
		}
	}()
	return b.measure(ctx, r)
}

// startSpokes starts the spokes' control planes and nodes, which pull
// from the hub's Gitea registry.
func (b *fleetBench) startSpokes(ctx context.Context) (func(), error) {
	var stops []func()
	stop := func() {
		for _, s := range stops {
			s()
		}
	}
	for k := 1; k < b.shape.clusters; k++ {
		c, err := kube.Start(ctx, kube.Options{})
		if err != nil {
			return stop, fmt.Errorf("starting spoke %d: %w", k, err)
		}
		node := kubeletsim.New(c.Config(), kubeletsim.WithNodeName(fmt.Sprintf("spoke%d-node", k)), kubeletsim.WithPullBackoff(time.Second),
			kubeletsim.WithBasicAuth(b.gitea.RegistryHost, b.gitea.AdminUser, b.gitea.Token))
		stops = append(stops, func() { node.Stop(); _ = c.Stop() })
		if err := node.Start(ctx); err != nil {
			return stop, fmt.Errorf("starting spoke %d's node: %w", k, err)
		}
		k8s, err := kubernetes.NewForConfig(c.Config())
		if err != nil {
			return stop, err
		}
		b.clusters, b.kubes = append(b.clusters, c), append(b.kubes, k8s)
	}
	return stop, nil
}

// populate pushes the images and the manifests (one directory per app),
// creates the namespaces, the Deployments as Argo CD or pinbot would have
// applied them, the spokes' cluster Secrets (through counting proxies) and
// the Applications, synced, and waits until every Pod runs.
func (b *fleetBench) populate(ctx context.Context) error {
	refs, err := b.pushImages("fleet", 2)
	if err != nil {
		return err
	}
	b.images = []string{byDigest(refs[0]), byDigest(refs[1])}
	// Argo CD's apps in one repository, pinbot's own in another: a merge
	// of pinbot's does not move the head Argo CD has not synced.
	for _, repo := range []string{"fleet", fleetOwnRepo} {
		dir := filepath.Join(b.tmp, repo)
		for i := range b.shape.apps {
			if b.own(i) != (repo == fleetOwnRepo) {
				continue
			}
			d := filepath.Join(dir, "apps", fleetName(i))
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(d, "deploy.yaml"), []byte(scaleDeploymentYAML(fleetName(i), b.images[0])), 0o644); err != nil {
				return err
			}
		}
		commit, err := b.gitea.CreateRepoFromDir(ctx, b.owner, repo, "main", dir)
		if err != nil {
			return err
		}
		if repo == "fleet" {
			b.commit = commit
		}
	}
	if err := b.argoTeams(ctx, b.kubes, fleetNamespaces); err != nil {
		return err
	}
	if err := parallel(ctx, b.shape.apps, 8, func(i int) error {
		if b.own(i) {
			return b.applyAsPinbot(ctx, i)
		}
		d := scaleDeployment(fleetName(i), b.images[0])
		_, err := b.kubes[b.clusterOf(i)].AppsV1().Deployments(b.namespace(i)).Create(ctx, d, metav1.CreateOptions{FieldManager: "argocd-controller"})
		return err
	}); err != nil {
		return fmt.Errorf("creating the Deployments: %w", err)
	}
	for k, c := range b.clusters {
		p, counter, err := countingProxyFor(c.Config())
		if err != nil {
			return err
		}
		b.proxies, b.counters = append(b.proxies, p), append(b.counters, counter)
		if k == 0 {
			continue
		}
		ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Certificate().Raw})
		if err := b.clusterSecret(ctx, k, p.URL, ca); err != nil {
			return err
		}
	}
	if err := parallel(ctx, b.shape.apps, 8, func(i int) error {
		if b.own(i) {
			return nil
		}
		dest := map[string]any{"server": "https://kubernetes.default.svc", "namespace": b.namespace(i)}
		if k := b.clusterOf(i); k > 0 {
			dest = map[string]any{"name": fmt.Sprintf("spoke%d", k), "namespace": b.namespace(i)}
		}
		app := syncedApplication(fleetName(i), "bench=fleet", b.gitea.RepoURL(b.owner, "fleet"), "apps/"+fleetName(i), dest, fleetName(i), b.commit)
		_, err := b.dyn.Resource(applicationsGVR).Namespace("argocd").Create(ctx, app, metav1.CreateOptions{})
		return err
	}); err != nil {
		return fmt.Errorf("creating the Applications: %w", err)
	}
	want := b.shape.apps * fleetAppPods
	_, err = benchPoll(ctx, b.shape.patience(40*time.Minute), "every Pod running", func() bool {
		n := 0
		for _, k := range b.kubes {
			pods, err := k.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
			if err != nil {
				return false
			}
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].ImageID != "" {
					n++
				}
			}
		}
		if n < want {
			fmt.Printf("   … %s of %s Pods running\n", thousands(n), thousands(want))
			time.Sleep(20 * time.Second)
		}
		return n == want
	})
	return err
}

// applyAsPinbot applies pinbot's own app i as its sync would have, with
// its marks: the fleet is in sync when serve starts.
func (b *fleetBench) applyAsPinbot(ctx context.Context, i int) error {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(scaleDeploymentYAML(fleetName(i), b.images[0])), &u.Object); err != nil {
		return err
	}
	u.SetNamespace(b.namespace(i))
	stamped, err := object.Stamp(u, fleetName(i))
	if err != nil {
		return err
	}
	data, err := json.Marshal(stamped.Object)
	if err != nil {
		return err
	}
	_, err = b.dyn.Resource(appsv1.SchemeGroupVersion.WithResource("deployments")).Namespace(b.namespace(i)).
		Patch(ctx, fleetName(i), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: object.FieldManager, Force: ptr.To(true)})
	return err
}

// clusterSecret writes Argo CD's cluster Secret of spoke k, named
// "spoke<k>", reaching server (its counting proxy), which trusts ca.
func (b *fleetBench) clusterSecret(ctx context.Context, k int, server string, ca []byte) error {
	conf := fmt.Sprintf(`{"bearerToken":"counted-by-the-proxy","tlsClientConfig":{"caData":%q}}`, base64.StdEncoding.EncodeToString(ca))
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cluster-spoke%d", k), Namespace: "argocd", Labels: map[string]string{"argocd.argoproj.io/secret-type": "cluster"}},
		StringData: map[string]string{"name": fmt.Sprintf("spoke%d", k), "server": server, "config": conf},
	}
	_, err := b.kube.CoreV1().Secrets("argocd").Create(ctx, s, metav1.CreateOptions{})
	return err
}

// config is serve's config: the Applications discovered by label, and
// pinbot's own apps listed, each synced from its directory.
func (b *fleetBench) config() string {
	var cfg strings.Builder
	cfg.WriteString("discover:\n  - argocd: {selector: bench=fleet}\napps:\n")
	for i := 0; i < b.shape.apps; i += fleetOwnEvery {
		fmt.Fprintf(&cfg, "  - {name: %s, repo: %s, branch: main, path: apps/%s, namespace: %s, allowNamespaces: [%s], syncPolicy: {automated: true}}\n",
			fleetName(i), b.gitea.RepoURL(b.owner, fleetOwnRepo), fleetName(i), b.namespace(i), b.namespace(i))
	}
	return cfg.String()
}

// memoryLimit is the --memory-limit auto sets in the replicas' container
// (fleetShape.container), running the pinbot built for this run.
func (b *fleetBench) memoryLimit() int64 {
	return memlimit.Auto(b.shape.container, b.bin)
}
