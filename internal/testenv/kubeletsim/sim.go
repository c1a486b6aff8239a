// Package kubeletsim plays a Kubernetes node for pinbot's tests, `make demo`
// and `make bench`, against a real API server (see
// pinbot.dev/pinbot/internal/testenv/kube) and a real OCI registry.
//
// A Sim registers a Ready Node and keeps its Lease fresh, binds pending Pods
// to it (there is no scheduler), and "runs" the Pods bound to it: it pulls
// every container image by resolving it against the registry with
// go-containerregistry, then reports the container statuses a kubelet
// would, with the imageID in the form the node's container runtime would
// use. A missing image gives the ErrImagePull/ImagePullBackOff waiting
// state. Job Pods run to completion. Pods being deleted are finalised, so
// rolling updates complete.
//
// Hooks set at run time make the node misbehave the ways pinbot must notice:
// FailReadiness (containers run but never become ready), StaleImage (the
// node kept an old image for a repository) and FailJob (a Job's Pod exits
// 1). Setting a hook re-evaluates every Pod on the node.
//
// The simulator works from watches (an informer and a work queue), never by
// polling. It is test support code but does not import "testing".
package kubeletsim

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"pinbot.dev/pinbot/internal/logctx"
)

// ImageIDForm is how a Sim reports status.containerStatuses[].imageID.
type ImageIDForm int

const (
	// RepoDigest reports repo@sha256:<digest of what the Pod referenced>:
	// the index digest when the reference names an index, as containerd
	// and Docker do. It is the default.
	RepoDigest ImageIDForm = iota
	// PlatformDigest reports repo@sha256:<digest of the node platform's
	// manifest>, the child of an index for the node's OS and architecture.
	PlatformDigest
	// ConfigDigest reports a bare sha256:<config digest> of the node
	// platform's image, as containerd can.
	ConfigDigest
	// DockerPullable reports docker-pullable://repo@sha256:<digest of what
	// the Pod referenced>, as dockershim and cri-dockerd do.
	DockerPullable
)

// String names the form.
func (f ImageIDForm) String() string {
	switch f {
	case RepoDigest:
		return "RepoDigest"
	case PlatformDigest:
		return "PlatformDigest"
	case ConfigDigest:
		return "ConfigDigest"
	case DockerPullable:
		return "DockerPullable"
	}
	return fmt.Sprintf("ImageIDForm(%d)", int(f))
}

// PodMatcher selects Pods for a hook.
type PodMatcher func(*corev1.Pod) bool

// Sim is one simulated node. Create it with New, then Start or Run it.
type Sim struct {
	cfg      *rest.Config
	nodeName string
	platform v1.Platform
	labels   map[string]string

	keychain    authn.Keychain
	transport   http.RoundTripper
	remoteOpts  []remote.Option
	insecure    map[string]bool
	pullTimeout time.Duration
	pullBackoff time.Duration
	runDuration time.Duration
	deleteDelay time.Duration
	heartbeat   time.Duration
	workers     int
	qps         float32
	burst       int
	nodeIP      string
	podIPPrefix string
	nodeIndex   int64
	nextPodIP   atomic.Int64
	runtimeName string
	imageIDForm atomic.Int64
	rewriteID   atomic.Pointer[func(string) string]
	failReady   atomic.Pointer[PodMatcher]
	crashLoop   atomic.Pointer[PodMatcher]
	failPullMu  sync.RWMutex
	failPull    []string // references whose pulls fail

	failJob      atomic.Pointer[PodMatcher]
	staleMu      sync.RWMutex
	stale        map[string]string // normalised repository -> digest
	images       *imageStore
	recordsMu    sync.Mutex
	records      map[string]*podRecord // by namespace/name
	client       kubernetes.Interface
	pods         corelisters.PodLister
	podsInformer cache.SharedIndexInformer
	queue        workqueue.TypedRateLimitingInterface[string]

	startMu sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
}

// nodeCounter gives each Sim of the process distinct fake addresses.
var nodeCounter atomic.Int64

// New returns a simulator for the cluster cfg points at. It does nothing
// until Start or Run.
func New(cfg *rest.Config, opts ...Option) *Sim {
	n := nodeCounter.Add(1)
	s := &Sim{
		cfg:         rest.CopyConfig(cfg),
		nodeName:    "sim-node",
		platform:    v1.Platform{OS: "linux", Architecture: "amd64"},
		keychain:    authn.DefaultKeychain,
		insecure:    map[string]bool{},
		pullTimeout: 30 * time.Second,
		pullBackoff: 5 * time.Second,
		heartbeat:   10 * time.Second,
		workers:     8,
		qps:         500,
		burst:       1000,
		nodeIndex:   n,
		nodeIP:      fmt.Sprintf("10.128.%d.%d", (n/250)%250, n%250+1),
		podIPPrefix: fmt.Sprintf("10.%d", 64+n%128),
		runtimeName: "containerd://2.1.0",
		stale:       map[string]string{},
		images:      newImageStore(),
		records:     map[string]*podRecord{},
	}
	for _, o := range opts {
		o(s)
	}
	if ImageIDForm(s.imageIDForm.Load()) == DockerPullable {
		s.runtimeName = "docker://28.0.0"
	}
	labels := map[string]string{
		corev1.LabelHostname:    s.nodeName,
		corev1.LabelOSStable:    s.platform.OS,
		corev1.LabelArchStable:  s.platform.Architecture,
		"pinbot.dev/kubeletsim": "true",
	}
	for k, v := range s.labels {
		labels[k] = v
	}
	s.labels = labels
	return s
}

// NodeName is the name of the Node the Sim registers.
func (s *Sim) NodeName() string { return s.nodeName }

// Start registers the Node, starts watching Pods and returns once the
// watch cache is in sync. The Sim then runs until ctx is done or Stop is
// called. Errors after Start are logged to the logger ctx carries
// (pinbot.dev/pinbot/internal/logctx) and retried.
func (s *Sim) Start(ctx context.Context) error {
	s.startMu.Lock()
	defer s.startMu.Unlock()
	if s.cancel != nil {
		return fmt.Errorf("starting node %s: already started", s.nodeName)
	}
	cfg := rest.CopyConfig(s.cfg)
	cfg.QPS, cfg.Burst = s.qps, s.burst
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating client for node %s: %w", s.nodeName, err)
	}
	s.client = client
	if err := s.registerNode(ctx); err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(client, 0)
	podInf := factory.Core().V1().Pods()
	s.podsInformer = podInf.Informer()
	s.pods = podInf.Lister()
	s.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](200*time.Millisecond, 10*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "kubeletsim-" + s.nodeName},
	)
	if _, err := s.podsInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    s.onPod,
		UpdateFunc: func(_, obj any) { s.onPod(obj) },
		DeleteFunc: s.onPodDelete,
	}); err != nil {
		cancel()
		return fmt.Errorf("watching pods for node %s: %w", s.nodeName, err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.podsInformer.HasSynced) {
		cancel()
		factory.Shutdown()
		s.queue.ShutDown()
		return fmt.Errorf("syncing the pod cache of node %s: %w", s.nodeName, context.Cause(ctx))
	}

	s.cancel = cancel
	s.done = make(chan struct{})
	var wg sync.WaitGroup
	for range s.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s.processNext(ctx) {
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.heartbeatLoop(ctx)
	}()
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
		factory.Shutdown()
		wg.Wait()
		close(s.done)
	}()
	logctx.From(ctx).Info("kubeletsim: node ready", "node", s.nodeName, "platform", s.platform.String())
	return nil
}

// Run starts the Sim and blocks until ctx is done.
func (s *Sim) Run(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	s.Stop()
	return nil
}

// Stop stops watching and waits for the workers to finish. The Node stays
// registered. Stop on a Sim that was never started does nothing.
func (s *Sim) Stop() {
	s.startMu.Lock()
	cancel, done := s.cancel, s.done
	s.startMu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// FailReadiness makes the containers of matching Pods run but never become
// ready, like seed 004's `readinessMode: fail` release. nil clears it.
func (s *Sim) FailReadiness(match PodMatcher) {
	s.setHook(&s.failReady, match)
}

// CrashLoop makes the long-running containers of matching Pods exit as
// soon as they start, over and over: they wait in CrashLoopBackOff with a
// growing restart count, as a release that crashes on start does. nil
// clears it.
func (s *Sim) CrashLoop(match PodMatcher) {
	s.setHook(&s.crashLoop, match)
}

// FailPull makes every pull of an image whose reference contains s fail,
// as a registry that lost the image or refuses the node would: the
// containers wait in ErrImagePull, then ImagePullBackOff. An empty s
// clears every such rule.
func (s *Sim) FailPull(ref string) {
	s.failPullMu.Lock()
	if ref == "" {
		s.failPull = nil
	} else {
		s.failPull = append(s.failPull, ref)
	}
	s.failPullMu.Unlock()
	s.resyncAll()
}

// FailJob makes matching run-to-completion Pods (restartPolicy Never or
// OnFailure, as Jobs create) fail: their containers exit 1. With
// restartPolicy Never the Pod ends Failed; with OnFailure its containers
// crash-loop and their restart count grows. nil clears it.
func (s *Sim) FailJob(match PodMatcher) {
	s.setHook(&s.failJob, match)
}

// StaleImage makes the node behave as if it kept an old image of repo: every
// container of repo on this node reports digest in its imageID whatever its
// spec says, and nothing is pulled for it. repo is any form the name
// package parses ("127.0.0.1:5000/org/app"); digest is "sha256:<hex>". An
// empty digest clears it.
func (s *Sim) StaleImage(repo, digest string) error {
	key, err := s.normaliseRepo(repo)
	if err != nil {
		return err
	}
	if digest != "" {
		if _, err := v1.NewHash(digest); err != nil {
			return fmt.Errorf("stale image digest %q for %s: %w", digest, repo, err)
		}
	}
	s.staleMu.Lock()
	if digest == "" {
		delete(s.stale, key)
	} else {
		s.stale[key] = digest
	}
	s.staleMu.Unlock()
	s.resyncAll()
	return nil
}

// SetImageIDRewrite makes the node report rewrite(imageID) instead of the
// imageID its form gives, from now on, for every Pod; nil stops it. It
// plays a runtime that names a mirror or another repository (CRI-O reports
// the first repoDigest in dictionary order), or the index of a pinned
// platform manifest.
func (s *Sim) SetImageIDRewrite(rewrite func(imageID string) string) {
	if rewrite == nil {
		s.rewriteID.Store(nil)
	} else {
		s.rewriteID.Store(&rewrite)
	}
	s.resyncAll()
}

// SetImageIDForm changes the imageID form reported from now on, for every
// Pod on the node.
func (s *Sim) SetImageIDForm(f ImageIDForm) {
	s.imageIDForm.Store(int64(f))
	s.resyncAll()
}

func (s *Sim) setHook(p *atomic.Pointer[PodMatcher], match PodMatcher) {
	if match == nil {
		p.Store(nil)
	} else {
		p.Store(&match)
	}
	s.resyncAll()
}

func hookMatches(p *atomic.Pointer[PodMatcher], pod *corev1.Pod) bool {
	m := p.Load()
	return m != nil && (*m)(pod)
}

func (s *Sim) staleDigest(repo string) (string, bool) {
	s.staleMu.RLock()
	defer s.staleMu.RUnlock()
	d, ok := s.stale[repo]
	return d, ok
}
