package reconciler

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRunsInWakesTheAppOfTheOwner(t *testing.T) {
	obj := func(apiVersion, kind, ns, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	st := newAppState()
	if !st.runsIn("shop", []string{"anything-1"}, []string{"shop"}) || st.runsIn("other", nil, []string{"shop"}) {
		t.Fatal("before a pass: want any object in the app's namespaces, and only there")
	}
	st.setWorkloads([]*unstructured.Unstructured{
		obj("apps/v1", "Deployment", "shop", "web"),
		obj("apps/v1", "StatefulSet", "shop", "db"),
		obj("v1", "Service", "shop", "front"), // not a workload
		obj("batch/v1", "Job", "jobs", "migrate"),
	})
	for _, c := range []struct {
		ns     string
		owners []string
		want   bool
	}{
		{"shop", []string{"web-5d8f7c"}, true},   // web's ReplicaSet's Pod
		{"shop", []string{"web"}, true},          // web's ReplicaSet
		{"shop", []string{"db"}, true},           // db's Pod
		{"jobs", []string{"migrate"}, true},      // the Job's Pod
		{"shop", nil, true},                      // a bare Pod, or a deletion's tombstone
		{"shop", []string{"webhook-7f9"}, false}, // another Deployment's ReplicaSet
		{"shop", []string{"front-1"}, false},     // not a workload of the app
		{"other", []string{"web-5d8f7c"}, false}, // another namespace
		{"other", nil, false},
	} {
		if got := st.runsIn(c.ns, c.owners, []string{"shop"}); got != c.want {
			t.Errorf("runsIn(%s, %v) = %t; want %t", c.ns, c.owners, got, c.want)
		}
	}
}

// A pass of an app whose loop runs here may use an inventory listing
// that began after the loop did; any other pass, only one that begins
// now.
func TestSinceIsTheLoopsStartOrNow(t *testing.T) {
	st := newAppState()
	before := time.Now()
	if got := st.since(); got.Before(before) {
		t.Errorf("no loop: since %v, want now (not before %v)", got, before)
	}
	loop := time.Now().Add(-time.Minute)
	st.ownedSince.Store(loop.UnixNano())
	if got := st.since(); !got.Equal(time.Unix(0, loop.UnixNano())) {
		t.Errorf("a loop since %v: since %v", loop, got)
	}
}
