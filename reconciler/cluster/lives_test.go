package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/reconciler/object"
)

func liveDeployment(name, app string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace("web")
	u.SetName(name)
	if app != "" {
		u.SetLabels(map[string]string{object.LabelApp: app})
	}
	_ = unstructured.SetNestedField(u.Object, int64(1), "spec", "replicas")
	return u
}

// The apps of one namespace share one watch per kind: each reads only
// the objects of its inventory, and a change wakes the app it belongs
// to.
func TestLivesShareAWatchPerKindAndNamespace(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	spec := WatchSpec{GVK: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, GVR: gvr, Namespace: "web"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "DeploymentList"},
		liveDeployment("a-web", "a"), liveDeployment("b-web", "b"), liveDeployment("b-worker", "b"), liveDeployment("theirs", ""))
	var mu sync.Mutex
	var woken []string
	c := newLives(dyn, newLiveness(func(context.Context) error { return nil }, time.Now), func(app string) {
		mu.Lock()
		defer mu.Unlock()
		woken = append(woken, app)
	}, func(app string) {
		mu.Lock()
		defer mu.Unlock()
		woken = append(woken, "status of "+app)
	})
	defer c.close()
	ctx := context.Background()
	for _, app := range []string{"a", "b", "a"} {
		if err := c.Ensure(ctx, app, []WatchSpec{spec}); err != nil {
			t.Fatal(err)
		}
	}
	names := func(app string) []string {
		objs, ok := c.Objects(app, spec)
		if !ok {
			t.Fatalf("app %s: not cached", app)
		}
		var out []string
		for _, o := range objs {
			out = append(out, o.GetName())
		}
		slices.Sort(out)
		return out
	}
	if got := names("a"); !slices.Equal(got, []string{"a-web"}) {
		t.Errorf("app a reads %v, want [a-web]", got)
	}
	if got := names("b"); !slices.Equal(got, []string{"b-web", "b-worker"}) {
		t.Errorf("app b reads %v, want [b-web b-worker]", got)
	}
	watches := 0
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "watch" {
			watches++
		}
	}
	if watches != 1 {
		t.Errorf("%d watches of Deployments in web for two apps, want 1", watches)
	}

	// The fake client's watch may open after the first LIST: change the
	// object until a change is seen.
	replicas := int64(1)
	poll.Until(t, 10*time.Second, "app b woken by its Deployment's change", func() (bool, string) {
		mu.Lock()
		seen := slices.Clone(woken)
		mu.Unlock()
		if len(seen) > 0 {
			return !slices.ContainsFunc(seen, func(app string) bool { return app != "b" }), fmt.Sprint(seen)
		}
		replicas++
		changed := liveDeployment("b-worker", "b")
		_ = unstructured.SetNestedField(changed.Object, replicas, "spec", "replicas")
		if _, err := dyn.Resource(gvr).Namespace("web").Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		return false, "no app woken"
	})

	// A change of a-web's status alone is no drift: it is told apart,
	// for the app waiting on its rollout.
	mu.Lock()
	woken = nil
	mu.Unlock()
	settled := liveDeployment("a-web", "a")
	_ = unstructured.SetNestedField(settled.Object, int64(1), "status", "availableReplicas")
	if _, err := dyn.Resource(gvr).Namespace("web").Update(ctx, settled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "app a told of its Deployment's status", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return slices.Equal(woken, []string{"status of a"}), fmt.Sprint(woken)
	})
}
