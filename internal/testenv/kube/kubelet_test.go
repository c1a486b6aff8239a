package kube

import (
	"context"
	"fmt"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// TestHollowKubeletReportsEachImageIDForm runs Pods on real kubelets whose
// image services name images three ways, and reads the imageID the
// kubelet's status manager wrote.
func TestHollowKubeletReportsEachImageIDForm(t *testing.T) {
	needCluster(t)
	ctx := t.Context()
	reg := httptest.NewServer(registry.New())
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")

	// An index of two platforms, the host's (the kubelet's) and another,
	// pushed by digest and tagged.
	other := "amd64"
	if runtime.GOARCH == other {
		other = "arm64"
	}
	children := map[string]v1.Image{}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range []string{runtime.GOARCH, other} {
		img, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		children[arch] = img
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	repo := host + "/team/app"
	tag, err := name.NewTag(repo + ":v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(tag, idx); err != nil {
		t.Fatal(err)
	}
	idxDigest, _ := idx.Digest()
	child := children[runtime.GOARCH]
	childDigest, _ := child.Digest()
	config, _ := child.ConfigName()

	client, err := kubernetes.NewForConfig(cluster.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		form, want string
	}{
		{RepoDigest, repo + "@" + idxDigest.String()},
		{PlatformDigest, repo + "@" + childDigest.String()},
		{ConfigDigest, config.String()},
	} {
		t.Run(tc.form, func(t *testing.T) {
			node := "hollow-" + tc.form
			k, err := cluster.StartHollowKubelet(ctx, KubeletOptions{Node: node, ImageIDForm: tc.form})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := k.Stop(); err != nil {
					t.Error(err)
				}
			})
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "default"},
				Spec: corev1.PodSpec{
					NodeName:   node,
					Containers: []corev1.Container{{Name: "app", Image: repo + ":v1@" + idxDigest.String()}},
				},
			}
			if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var got string
			err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				p, err := client.CoreV1().Pods("default").Get(ctx, node, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				for _, cs := range p.Status.ContainerStatuses {
					// kubemark's prober says Ready before the container runs:
					// wait for Running.
					if cs.State.Running != nil {
						got = cs.ImageID
						return true, nil
					}
					got = fmt.Sprintf("not ready: %+v", cs.State)
				}
				return false, nil
			})
			if err != nil {
				t.Fatalf("waiting for the Pod to run (last: %s): %v\n%s", got, err, k.Tail(20))
			}
			if got != tc.want {
				t.Errorf("imageID = %s, want %s\n%s", got, tc.want, k.Tail(40))
			}
		})
	}
}
