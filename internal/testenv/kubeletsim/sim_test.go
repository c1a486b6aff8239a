package kubeletsim

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestNodeIsRegisteredReady(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	n, err := client.CoreV1().Nodes().Get(ctx, node.NodeName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{
		"os":    n.Status.NodeInfo.OperatingSystem,
		"arch":  n.Status.NodeInfo.Architecture,
		"label": n.Labels[corev1.LabelArchStable],
	}
	for _, c := range n.Status.Conditions {
		got[string(c.Type)] = string(c.Status)
	}
	want := map[string]string{
		"os": "linux", "arch": "amd64", "label": "amd64",
		"Ready": "True", "MemoryPressure": "False", "DiskPressure": "False", "PIDPressure": "False",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node %s (-want +got):\n%s", n.Name, diff)
	}
	for _, taint := range n.Spec.Taints {
		t.Errorf("node %s has taint %s:%s", n.Name, taint.Key, taint.Effect)
	}
	lease, err := client.CoordinationV1().Leases("kube-node-lease").Get(ctx, node.NodeName(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node lease: %v", err)
	}
	if lease.Spec.RenewTime == nil || ptr.Deref(lease.Spec.HolderIdentity, "") != node.NodeName() {
		t.Errorf("lease %s: holder %q renewTime %v", lease.Name, ptr.Deref(lease.Spec.HolderIdentity, ""), lease.Spec.RenewTime)
	}
}

func TestImageIDForms(t *testing.T) {
	needCluster(t)
	single := pushImage(t, "forms/single", "")
	tagged := pushImage(t, "forms/tagged", "v1")
	index, configs := pushIndex(t, "forms/index")
	t.Cleanup(func() { node.SetImageIDForm(RepoDigest) })

	tests := []struct {
		name  string
		image string
		form  ImageIDForm
		want  string
	}{
		{"single RepoDigest", single.ref(), RepoDigest, single.ref()},
		{"single PlatformDigest", single.ref(), PlatformDigest, single.ref()},
		{"single ConfigDigest", single.ref(), ConfigDigest, single.config},
		{"single DockerPullable", single.ref(), DockerPullable, "docker-pullable://" + single.ref()},
		{"tag RepoDigest", tagged.repo + ":v1", RepoDigest, tagged.ref()},
		{"tag ConfigDigest", tagged.repo + ":v1", ConfigDigest, tagged.config},
		{"index RepoDigest", index.ref(), RepoDigest, index.ref()},
		{"index PlatformDigest", index.ref(), PlatformDigest, index.repo + "@" + index.children["amd64"]},
		{"index ConfigDigest", index.ref(), ConfigDigest, configs["amd64"]},
		{"index DockerPullable", index.ref(), DockerPullable, "docker-pullable://" + index.ref()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			node.SetImageIDForm(tc.form)
			ns := namespace(t)
			createDeployment(t, ns, deployment("app", tc.image, 2))
			pods := waitRolledOut(t, ns, "app", 2, tc.want)
			p := pods[0]
			if p.Spec.NodeName != node.NodeName() || p.Status.HostIP == "" || p.Status.PodIP == "" {
				t.Errorf("pod %s: node %q hostIP %q podIP %q", p.Name, p.Spec.NodeName, p.Status.HostIP, p.Status.PodIP)
			}
			conds := map[corev1.PodConditionType]corev1.ConditionStatus{}
			for _, c := range p.Status.Conditions {
				conds[c.Type] = c.Status
			}
			want := map[corev1.PodConditionType]corev1.ConditionStatus{
				corev1.PodScheduled: "True", corev1.PodInitialized: "True", corev1.ContainersReady: "True",
				corev1.PodReady: "True", corev1.PodReadyToStartContainers: "True",
			}
			if diff := cmp.Diff(want, conds); diff != "" {
				t.Errorf("pod %s conditions (-want +got):\n%s", p.Name, diff)
			}
			if cs := p.Status.ContainerStatuses[0]; cs.Image != tc.image || cs.State.Running == nil || !ptr.Deref(cs.Started, false) {
				t.Errorf("pod %s container: image %q running %v started %v", p.Name, cs.Image, cs.State.Running, cs.Started)
			}
		})
	}
}

func TestMissingImageBacksOffUntilPushed(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := namespace(t)
	repo := regHost + "/missing/app"
	pushImage(t, "missing/app", "other") // the repository exists; the tag does not, yet

	// ErrImagePull lasts only until the next look at the Pod: watch for it.
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	createDeployment(t, ns, deployment("app", repo+":later", 1))

	deadline := time.After(testWait)
	var seen []string
	for _, reason := range []string{"ErrImagePull", "ImagePullBackOff"} {
	watch:
		for {
			select {
			case <-deadline:
				t.Fatalf("waiting for reason %s; saw %v", reason, seen)
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatal("pod watch ended")
				}
				p, ok := ev.Object.(*corev1.Pod)
				if !ok || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil {
					continue
				}
				w := p.Status.ContainerStatuses[0].State.Waiting
				seen = append(seen, w.Reason)
				if w.Reason != reason {
					continue
				}
				// The registry's own error reaches the status message.
				if !strings.Contains(w.Message, "MANIFEST_UNKNOWN") || !strings.Contains(w.Message, repo+":later") {
					t.Errorf("%s message %q does not carry the registry error", reason, w.Message)
				}
				if p.Status.Phase != corev1.PodPending || podReady(p) {
					t.Errorf("pod %s with an image that will not pull is %s, ready %t", p.Name, p.Status.Phase, podReady(p))
				}
				break watch
			}
		}
	}

	img := pushImage(t, "missing/app", "later")
	waitRolledOut(t, ns, "app", 1, img.ref())
}

func TestFailReadinessStallsTheRollout(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := namespace(t)
	good := pushImage(t, "readiness/app", "")
	bad := pushImage(t, "readiness/app", "")
	createDeployment(t, ns, deployment("app", good.ref(), 2))
	old := waitRolledOut(t, ns, "app", 2, good.ref())

	node.FailReadiness(UsesImage(bad.digest))
	t.Cleanup(func() { node.FailReadiness(nil) })
	setImage(t, ns, "app", bad.ref())

	// The new Pod runs but is never ready; with maxUnavailable 0 the old
	// Pods keep serving.
	eventually(t, "the bad release's Pod to run unready while the old Pods serve", func(ctx context.Context) (bool, string, error) {
		pods, err := podsOf(ctx, ns, "app")
		if err != nil {
			return false, "", err
		}
		var newRunning, oldReady int
		for i := range pods {
			p := &pods[i]
			if len(p.Status.ContainerStatuses) != 1 {
				continue
			}
			cs := p.Status.ContainerStatuses[0]
			switch cs.ImageID {
			case bad.ref():
				if cs.State.Running != nil && !cs.Ready && !podReady(p) && p.Status.Phase == corev1.PodRunning {
					newRunning++
				}
			case good.ref():
				if podReady(p) && p.DeletionTimestamp == nil {
					oldReady++
				}
			}
		}
		d, err := client.AppsV1().Deployments(ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		st := d.Status
		return newRunning == 1 && oldReady == 2 && st.ObservedGeneration == d.Generation &&
				st.UpdatedReplicas == 1 && st.AvailableReplicas == 2 && st.UnavailableReplicas == 1,
			fmt.Sprintf("%s status=%+v", describe(pods), st), nil
	})
	for _, p := range old {
		if _, err := client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{}); err != nil {
			t.Errorf("old pod %s gone during a stalled rollout: %v", p.Name, err)
		}
	}

	// Readiness recovers (the fix): the rollout completes.
	node.FailReadiness(nil)
	waitRolledOut(t, ns, "app", 2, bad.ref())
}

func TestStaleImageReportsTheOldDigest(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	old := pushImage(t, "stale/app", "")
	cur := pushImage(t, "stale/app", "")
	if err := node.StaleImage(old.repo, old.digest); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.StaleImage(old.repo, "") })

	createDeployment(t, ns, deployment("app", cur.ref(), 1))
	waitRolledOut(t, ns, "app", 1, old.ref())

	if err := node.StaleImage(old.repo, ""); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, ns, "app", 1, cur.ref())

	if err := node.StaleImage(old.repo, "latest"); err == nil {
		t.Error("StaleImage with a malformed digest: no error")
	}
}

func TestRollingUpdateCompletes(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	v1 := pushImage(t, "rolling/app", "")
	v2 := pushImage(t, "rolling/app", "")
	createDeployment(t, ns, deployment("app", v1.ref(), 3))
	waitRolledOut(t, ns, "app", 3, v1.ref())

	setImage(t, ns, "app", v2.ref())
	waitRolledOut(t, ns, "app", 3, v2.ref())
	eventually(t, "the Deployment to report the rollout complete", func(ctx context.Context) (bool, string, error) {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, "app", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		st := d.Status
		return st.ObservedGeneration == d.Generation && st.UpdatedReplicas == 3 && st.Replicas == 3 &&
			st.AvailableReplicas == 3 && st.UnavailableReplicas == 0, fmt.Sprintf("%+v", st), nil
	})
}

func TestJobs(t *testing.T) {
	needCluster(t)
	img := pushImage(t, "jobs/migrate", "")
	node.FailJob(func(p *corev1.Pod) bool { return p.Labels["migration"] == "broken" })
	t.Cleanup(func() { node.FailJob(nil) })

	tests := []struct {
		name      string
		label     string
		condition batchv1.JobConditionType
		phase     corev1.PodPhase
		exitCode  int32
	}{
		{"completes", "ok", batchv1.JobComplete, corev1.PodSucceeded, 0},
		{"fails", "broken", batchv1.JobFailed, corev1.PodFailed, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ns := namespace(t)
			job := &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Name: "migrate"},
				Spec: batchv1.JobSpec{
					BackoffLimit: ptr.To(int32(0)),
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"migration": tc.label}},
						Spec: corev1.PodSpec{
							RestartPolicy: corev1.RestartPolicyNever,
							Containers:    []corev1.Container{{Name: "migrate", Image: img.ref()}},
						},
					},
				},
			}
			if _, err := client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "Job condition "+string(tc.condition), func(ctx context.Context) (bool, string, error) {
				j, err := client.BatchV1().Jobs(ns).Get(ctx, "migrate", metav1.GetOptions{})
				if err != nil {
					return false, "", err
				}
				for _, c := range j.Status.Conditions {
					if c.Type == tc.condition && c.Status == corev1.ConditionTrue {
						return true, "", nil
					}
				}
				return false, fmt.Sprintf("%+v", j.Status), nil
			})
			pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "migration=" + tc.label})
			if err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) != 1 {
				t.Fatalf("got %d Job pods, want 1: %s", len(pods.Items), describe(pods.Items))
			}
			p := pods.Items[0]
			term := p.Status.ContainerStatuses[0].State.Terminated
			if p.Status.Phase != tc.phase || term == nil || term.ExitCode != tc.exitCode {
				t.Errorf("job pod: %s, want phase %s exit %d", describe(pods.Items), tc.phase, tc.exitCode)
			}
		})
	}
}

func TestInitContainersRunFirst(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := namespace(t)
	initImg := pushImage(t, "init/setup", "")
	app := pushImage(t, "init/app", "")

	pod := func(name, initImage string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "setup", Image: initImage}},
				Containers:     []corev1.Container{{Name: "app", Image: app.ref()}},
			},
		}
	}
	for _, p := range []*corev1.Pod{pod("ok", initImg.ref()), pod("stuck", regHost+"/init/nope:v1")} {
		if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	pods := waitRolledOut(t, ns, "ok", 1, app.ref())
	ics := pods[0].Status.InitContainerStatuses
	if len(ics) != 1 || ics[0].State.Terminated == nil || ics[0].State.Terminated.Reason != "Completed" || ics[0].ImageID != initImg.ref() {
		t.Errorf("init container of a running pod: %s", describe(pods))
	}

	eventually(t, "the Pod whose init image is missing to wait", func(ctx context.Context) (bool, string, error) {
		pods, err := podsOf(ctx, ns, "stuck")
		if err != nil || len(pods) != 1 {
			return false, describe(pods), err
		}
		st := pods[0].Status
		if len(st.InitContainerStatuses) != 1 || len(st.ContainerStatuses) != 1 {
			return false, describe(pods), nil
		}
		iw, aw := st.InitContainerStatuses[0].State.Waiting, st.ContainerStatuses[0].State.Waiting
		ok := iw != nil && (iw.Reason == "ErrImagePull" || iw.Reason == "ImagePullBackOff") &&
			aw != nil && aw.Reason == "PodInitializing" && st.Phase == corev1.PodPending
		return ok, describe(pods), nil
	})
}

func TestDeletedPodsAreFinalised(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := namespace(t)
	img := pushImage(t, "delete/app", "")
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{"app": "app"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: img.ref()}}},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, ns, "app", 1, img.ref())
	// The default 30s grace period: only the node can end it early.
	if err := client.CoreV1().Pods(ns).Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted Pod to be gone", func(ctx context.Context) (bool, string, error) {
		_, err := client.CoreV1().Pods(ns).Get(ctx, "app", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		return false, "still there", err
	})
}

func TestArm64NodePicksItsPlatform(t *testing.T) {
	needCluster(t)
	ctx := context.Background()
	ns := namespace(t)
	index, configs := pushIndex(t, "arm/app")

	arm := New(cluster.Config(), WithNodeName("sim-arm64"), WithPlatform("linux", "arm64", ""),
		WithImageIDForm(PlatformDigest))
	if err := arm.Start(simCtx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(arm.Stop)

	d := deployment("app", index.ref(), 1)
	d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "arm64"}
	createDeployment(t, ns, d)
	pods := waitRolledOut(t, ns, "app", 1, index.repo+"@"+index.children["arm64"])
	if pods[0].Spec.NodeName != "sim-arm64" {
		t.Errorf("arm64 pod bound to %q, want sim-arm64", pods[0].Spec.NodeName)
	}

	arm.SetImageIDForm(ConfigDigest)
	waitRolledOut(t, ns, "app", 1, configs["arm64"])

	n, err := client.CoreV1().Nodes().Get(ctx, "sim-arm64", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Status.NodeInfo.Architecture != "arm64" {
		t.Errorf("node sim-arm64 reports architecture %q", n.Status.NodeInfo.Architecture)
	}
}

func TestRegistryBasicAuth(t *testing.T) {
	needCluster(t)
	ns := namespace(t)
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	private := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "pinbot" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(private.Close)
	host := strings.TrimPrefix(private.URL, "http://")

	img, err := random.Image(128, 1)
	if err != nil {
		t.Fatal(err)
	}
	dg, _ := img.Digest()
	ref := host + "/private/app@" + dg.String()
	r, _ := name.ParseReference(ref)
	if err := remote.Write(r, img, remote.WithAuth(&authn.Basic{Username: "pinbot", Password: "s3cret"})); err != nil {
		t.Fatal(err)
	}

	authed := New(cluster.Config(), WithNodeName("sim-private"), WithNodeLabels(map[string]string{"pinbot.dev/registry": "private"}),
		WithBasicAuth(host, "pinbot", "s3cret"))
	if err := authed.Start(simCtx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(authed.Stop)

	// The shared node has no credentials: its pull is refused.
	anon := deployment("anonymous", ref, 1)
	anon.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node.NodeName()}
	createDeployment(t, ns, anon)
	eventually(t, "an anonymous pull to be refused", func(ctx context.Context) (bool, string, error) {
		pods, err := podsOf(ctx, ns, "anonymous")
		if err != nil || len(pods) != 1 || len(pods[0].Status.ContainerStatuses) != 1 {
			return false, describe(pods), err
		}
		w := pods[0].Status.ContainerStatuses[0].State.Waiting
		return w != nil && strings.Contains(w.Message, "UNAUTHORIZED"), describe(pods), nil
	})

	d := deployment("authed", ref, 1)
	d.Spec.Template.Spec.NodeSelector = map[string]string{"pinbot.dev/registry": "private"}
	createDeployment(t, ns, d)
	pods := waitRolledOut(t, ns, "authed", 1, ref)
	if pods[0].Spec.NodeName != "sim-private" {
		t.Errorf("pod bound to %q, want sim-private", pods[0].Spec.NodeName)
	}
}
