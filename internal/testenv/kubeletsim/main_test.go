package kubeletsim

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/testenv/images"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/poll"
)

// The shared peers of this package's tests; nil under -short. Tests do not
// run in parallel: they set hooks on the one shared node.
var (
	cluster  *kube.Cluster
	client   kubernetes.Interface
	regHost  string // host:port of the in-memory registry
	node     *Sim   // linux/amd64, RepoDigest unless a test changes it
	simCtx   context.Context
	testWait = 60 * time.Second
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if testing.Short() {
		return m.Run()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := kube.Start(ctx, kube.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the control plane: %s\n", err.Error())
		return 1
	}
	defer c.Stop()
	fmt.Fprintf(os.Stderr, "control plane up in %s\n", c.StartupTime.Round(time.Millisecond))
	cluster = c
	client = kubernetes.NewForConfigOrDie(c.Config())

	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	regHost = strings.TrimPrefix(reg.URL, "http://")

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	simCtx = logctx.Into(ctx, logger)
	node = New(c.Config(), WithNodeName("sim-amd64"))
	if err := node.Start(simCtx); err != nil {
		fmt.Fprintf(os.Stderr, "starting the simulated node: %s\n", err.Error())
		return 1
	}
	defer node.Stop()

	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "control plane logs:\n%s", c.Tail(30))
	}
	return code
}

func needCluster(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
}

// pushed is an image pushed to the test registry.
type pushed struct {
	repo     string // 127.0.0.1:port/name
	digest   string // of the manifest, or of the index
	config   string // config digest of the linux/amd64 image
	children map[string]string
}

func (p pushed) ref() string { return p.repo + "@" + p.digest }

// pushImage pushes a random single-platform image to repo, tagged tag when
// tag is not empty.
func pushImage(t *testing.T, repo, tag string) pushed {
	t.Helper()
	img, err := images.Random()
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	p := pushed{repo: regHost + "/" + repo, digest: d.String()}
	ref := p.ref()
	if tag != "" {
		ref = p.repo + ":" + tag
	}
	got, err := images.Push(ref, img)
	if err != nil {
		t.Fatal(err)
	}
	p.config = got.Config
	return p
}

// pushIndex pushes a multi-arch index: an attestation manifest first (as
// buildx writes them, platform unknown/unknown), then linux/amd64 and
// linux/arm64/v8. config is the amd64 image's config digest; children maps
// "amd64" and "arm64" to the platform manifests' digests.
func pushIndex(t *testing.T, repo string) (pushed, map[string]string) {
	t.Helper()
	idx, err := images.RandomIndex(regHost+"/"+repo+":latest",
		[]v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}})
	if err != nil {
		t.Fatal(err)
	}
	return pushed{repo: regHost + "/" + repo, digest: idx.Digest, config: idx.Configs["amd64"], children: idx.Children}, idx.Configs
}

// namespace creates a namespace for one test and deletes it afterwards.
func namespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sim-test-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}) })
	return ns.Name
}

// deployment is a Deployment of image with a rolling update that never
// takes a ready Pod away before its replacement is ready.
func deployment(name, image string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &zero, MaxSurge: &one},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}
}

func createDeployment(t *testing.T, ns string, d *appsv1.Deployment) *appsv1.Deployment {
	t.Helper()
	d, err := client.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// setImage rolls a Deployment to a new image.
func setImage(t *testing.T, ns, name, image string) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = image
		_, err = client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond until it holds, failing the test with cond's last
// explanation at the deadline.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	poll.Until(t, testWait, what, func() (bool, string) {
		ok, why, err := cond(context.Background())
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		return ok, why
	})
}

// podsOf lists the Pods with label app=name.
func podsOf(ctx context.Context, ns, name string) ([]corev1.Pod, error) {
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// describe summarises Pods for a failure message.
func describe(pods []corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "[%s node=%q phase=%s deleting=%t", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil)
		for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			state := "?"
			switch {
			case cs.State.Waiting != nil:
				state = "waiting:" + cs.State.Waiting.Reason + ":" + cs.State.Waiting.Message
			case cs.State.Running != nil:
				state = "running"
			case cs.State.Terminated != nil:
				state = fmt.Sprintf("terminated:%s:%d", cs.State.Terminated.Reason, cs.State.Terminated.ExitCode)
			}
			fmt.Fprintf(&b, " %s{%s ready=%t id=%s}", cs.Name, state, cs.Ready, cs.ImageID)
		}
		b.WriteString("] ")
	}
	return b.String()
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitRolledOut waits until the Deployment's Pods are exactly replicas live
// Pods, all Running, ready and reporting imageID, and none terminating.
func waitRolledOut(t *testing.T, ns, name string, replicas int, imageID string) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	eventually(t, fmt.Sprintf("%s/%s to run %d ready Pods with imageID %s", ns, name, replicas, imageID), func(ctx context.Context) (bool, string, error) {
		var err error
		pods, err = podsOf(ctx, ns, name)
		if err != nil {
			return false, "", err
		}
		if len(pods) != replicas {
			return false, describe(pods), nil
		}
		for i := range pods {
			p := &pods[i]
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !podReady(p) ||
				len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].ImageID != imageID {
				return false, describe(pods), nil
			}
		}
		return true, "", nil
	})
	return pods
}
