package ignore

import (
	"testing"

	"pinbot.dev/pinbot/reconciler/object"
)

func TestIgnored(t *testing.T) {
	web := object.Ref{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web-1"}
	cm := object.Ref{Kind: "ConfigMap", Namespace: "shop", Name: "settings"}
	replicas := []Rule{{Object: "apps/Deployment/web-*", Pointers: []string{"/spec/replicas"}}}
	for _, tc := range []struct {
		name    string
		rules   []Rule
		ref     object.Ref
		pointer string
		want    bool
	}{
		{"exact field", replicas, web, "/spec/replicas", true},
		{"another field", replicas, web, "/spec/paused", false},
		{"a field below the pointer", []Rule{{Object: "apps/Deployment/web-1", Pointers: []string{"/spec/template"}}}, web, "/spec/template/spec/containers/0/image", true},
		{"a field whose name starts like the pointer", []Rule{{Object: "apps/Deployment/web-1", Pointers: []string{"/spec/replica"}}}, web, "/spec/replicas", false},
		{"name glob does not match", []Rule{{Object: "apps/Deployment/api-*", Pointers: []string{"/spec/replicas"}}}, web, "/spec/replicas", false},
		{"group must match", []Rule{{Object: "extensions/Deployment/web-1", Pointers: []string{"/spec/replicas"}}}, web, "/spec/replicas", false},
		{"kind must match", []Rule{{Object: "apps/StatefulSet/web-1", Pointers: []string{"/spec/replicas"}}}, web, "/spec/replicas", false},
		{"core kind as Kind/name", []Rule{{Object: "ConfigMap/settings", Pointers: []string{"/data/k"}}}, cm, "/data/k", true},
		{"Kind/name does not match a named group", []Rule{{Object: "Deployment/web-1", Pointers: []string{"/spec/replicas"}}}, web, "/spec/replicas", false},
		{"all globs", []Rule{{Object: "*/*/*", Pointers: []string{"/metadata/annotations"}}}, web, "/metadata/annotations/x", true},
		{"wildcard segment", []Rule{{Object: "apps/Deployment/web-1", Pointers: []string{"/spec/template/spec/containers/*/image"}}}, web, "/spec/template/spec/containers/3/image", true},
		{"escaped segment", []Rule{{Object: "apps/Deployment/web-1", Pointers: []string{"/metadata/labels/app.kubernetes.io~1name"}}}, web, "/metadata/labels/app.kubernetes.io~1name", true},
		{"second pointer of a rule", []Rule{{Object: "apps/Deployment/web-1", Pointers: []string{"/spec/paused", "/spec/replicas"}}}, web, "/spec/replicas", true},
		{"second rule", []Rule{{Object: "ConfigMap/x", Pointers: []string{"/spec/replicas"}}, replicas[0]}, web, "/spec/replicas", true},
		{"no rules", nil, web, "/spec/replicas", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Matches(tc.rules, tc.ref, tc.pointer); got != tc.want {
				t.Errorf("Matches(%v, %s, %q) = %t, want %t", tc.rules, tc.ref, tc.pointer, got, tc.want)
			}
		})
	}
}
