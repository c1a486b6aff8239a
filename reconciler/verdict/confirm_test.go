package verdict_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/verdict"
)

func TestConfirm(t *testing.T) {
	workload := func(kind, name, uid, version string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("apps/v1")
		if kind == "ConfigMap" {
			u.SetAPIVersion("v1")
		}
		u.SetKind(kind)
		u.SetNamespace("shop")
		u.SetName(name)
		u.SetUID(k8stypes.UID(uid))
		u.SetResourceVersion(version)
		return u
	}
	web, db, cfg := workload("Deployment", "web", "u1", "7"), workload("StatefulSet", "db", "u2", "3"), workload("ConfigMap", "cfg", "u3", "1")
	snap := &verdict.Snapshot{
		Desired: []*unstructured.Unstructured{web, db, cfg},
		Live:    map[object.Ref]*unstructured.Unstructured{object.RefOf(web): web, object.RefOf(db): db, object.RefOf(cfg): cfg},
	}
	reading := func(live ...*unstructured.Unstructured) func(context.Context, map[object.Ref]*unstructured.Unstructured, map[object.Ref]*unstructured.Unstructured) error {
		return func(_ context.Context, want, got map[object.Ref]*unstructured.Unstructured) error {
			if _, ok := want[object.RefOf(cfg)]; ok {
				t.Errorf("asked to read %s again, which runs no Pod", object.RefOf(cfg))
			}
			for _, u := range live {
				got[object.RefOf(u)] = u
			}
			return nil
		}
	}
	for _, c := range []struct {
		name  string
		read  func(context.Context, map[object.Ref]*unstructured.Unstructured, map[object.Ref]*unstructured.Unstructured) error
		want  string // in the reason; "" for none
		moved bool
	}{
		{"unchanged", reading(web, db), "", false},
		{"a ConfigMap's change is not a workload's", reading(web, db, workload("ConfigMap", "cfg", "u3", "2")), "", false},
		{"a rollout begun", reading(workload("Deployment", "web", "u1", "8"), db), "Deployment shop/web changed while its Pods were collected (resourceVersion 7, then 8)", true},
		{"deleted and made again", reading(web, workload("StatefulSet", "db", "u9", "3")), "StatefulSet shop/db changed", true},
		{"deleted", reading(web), "StatefulSet shop/db was deleted", true},
		{"unreadable", func(context.Context, map[object.Ref]*unstructured.Unstructured, map[object.Ref]*unstructured.Unstructured) error {
			return errors.New("the server is unavailable")
		}, "reading the workloads again after collecting their Pods: the server is unavailable", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			reason, moved := verdict.Confirm(context.Background(), snap, c.read)
			if moved != c.moved || (c.want == "") != (reason == "") || !strings.Contains(reason, c.want) {
				t.Errorf("Confirm = %q, %v; want %q, %v", reason, moved, c.want, c.moved)
			}
		})
	}
}
