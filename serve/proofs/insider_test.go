package proofs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/poll"
)

// TestANamespaceEditorCannotMarkAnAppProven: a Proof Ready moves the
// next wave of Flux or Argo CD, so who may write one matters. On a real
// API server with the cluster's aggregated roles, a user bound to the
// built-in edit role in the app's namespace may read its Proof (the view
// role the chart and component ship aggregates into it) but may neither
// edit the Proof nor patch its status; only serve's own ClusterRole
// writes them.
func TestANamespaceEditorCannotMarkAnAppProven(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
	ctx := context.Background()
	c, err := kube.Start(ctx, kube.Options{Users: []kube.User{{Name: "dev"}},
		Controllers: append(append([]string{}, kube.DefaultControllers...), "clusterrole-aggregation")})
	if err != nil {
		t.Fatalf("starting the control plane: %s", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	component := filepath.Join("..", "..", "deploy", "components", "proofs")
	if err := c.InstallCRDs(ctx, filepath.Join(component, "proofs.pinbot.dev.yaml")); err != nil {
		t.Fatal(err)
	}
	admin, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	var view rbacv1.ClusterRole
	if data, err := os.ReadFile(filepath.Join(component, "rbac-view.yaml")); err != nil {
		t.Fatal(err)
	} else if err := yaml.Unmarshal(data, &view); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &view, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dev-edit"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "dev"}}}
	if _, err := admin.RbacV1().RoleBindings("web").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	adminDyn, err := dynamic.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	proof := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"app": "web"}}}
	proof.SetGroupVersionKind(GVK)
	proof.SetName("web")
	if _, err := adminDyn.Resource(GVR).Namespace("web").Create(ctx, proof, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rc, err := c.UserConfig("dev")
	if err != nil {
		t.Fatal(err)
	}
	dev, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	proofs := dev.Resource(GVR).Namespace("web")
	poll.Until(t, time.Minute, "the view role aggregated into edit: dev reads the Proof", func() (bool, string) {
		_, err := proofs.Get(ctx, "web", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	ready := []byte(`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Verified","message":"trust me","lastTransitionTime":"2026-12-06T09:00:00Z"}]}}`)
	if _, err := proofs.Patch(ctx, "web", types.MergePatchType, ready, metav1.PatchOptions{}, "status"); !apierrors.IsForbidden(err) {
		t.Errorf("dev patching the Proof's status Ready: %v, want Forbidden", err)
	}
	if _, err := proofs.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"app":"other"}}`), metav1.PatchOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("dev editing the Proof: %v, want Forbidden", err)
	}
	if err := proofs.Delete(ctx, "web", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("dev deleting the Proof: %v, want Forbidden", err)
	}
}
