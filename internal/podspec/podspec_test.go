package podspec

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestContainersOf: the containers of a Pod, of a workload's template
// and of a CronJob's, init and ephemeral ones included; an update
// judges only the containers whose image it changes.
func TestContainersOf(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      []Container
	}{
		{"a Pod", `{"kind":"Pod","spec":{"initContainers":[{"name":"init","image":"a@sha256:1"}],"containers":[{"name":"app","image":"b:v1"}],"ephemeralContainers":[{"name":"debug","image":"c"}]}}`,
			[]Container{{"init", "a@sha256:1"}, {"app", "b:v1"}, {"debug", "c"}}},
		{"a Deployment", `{"kind":"Deployment","spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"app","image":"b@sha256:2"}]}}}}`,
			[]Container{{"app", "b@sha256:2"}}},
		{"a CronJob", `{"kind":"CronJob","spec":{"schedule":"@hourly","jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"job","image":"d"}]}}}}}}`,
			[]Container{{"job", "d"}}},
	} {
		got, err := ContainersOf([]byte(tc.raw))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: containers (-want +got):\n%s", tc.name, diff)
		}
	}
	before := []Container{{"app", "b@sha256:1"}, {"sidecar", "s:v1"}}
	now := []Container{{"app", "b@sha256:2"}, {"sidecar", "s:v1"}}
	if diff := cmp.Diff([]Container{{"app", "b@sha256:2"}}, Changed(now, before)); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	if got := Changed(before, before); len(got) != 0 {
		t.Errorf("a scale: changed %v, want none", got)
	}
}
