package serve

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestContainersOf: the containers of a Pod, of a workload's template
// and of a CronJob's, init and ephemeral ones included; an update
// judges only the containers whose image it changes.
func TestContainersOf(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		want      []container
	}{
		{"a Pod", `{"kind":"Pod","spec":{"initContainers":[{"name":"init","image":"a@sha256:1"}],"containers":[{"name":"app","image":"b:v1"}],"ephemeralContainers":[{"name":"debug","image":"c"}]}}`,
			[]container{{"init", "a@sha256:1"}, {"app", "b:v1"}, {"debug", "c"}}},
		{"a Deployment", `{"kind":"Deployment","spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"app","image":"b@sha256:2"}]}}}}`,
			[]container{{"app", "b@sha256:2"}}},
		{"a CronJob", `{"kind":"CronJob","spec":{"schedule":"@hourly","jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"job","image":"d"}]}}}}}}`,
			[]container{{"job", "d"}}},
	} {
		got, err := containersOf([]byte(tc.raw))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: containers (-want +got):\n%s", tc.name, diff)
		}
	}
	before := []container{{"app", "b@sha256:1"}, {"sidecar", "s:v1"}}
	now := []container{{"app", "b@sha256:2"}, {"sidecar", "s:v1"}}
	if diff := cmp.Diff([]container{{"app", "b@sha256:2"}}, changedContainers(now, before)); diff != "" {
		t.Errorf("changed (-want +got):\n%s", diff)
	}
	if got := changedContainers(before, before); len(got) != 0 {
		t.Errorf("a scale: changed %v, want none", got)
	}
}

func TestAdmissionConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    Admission
		want string // "" for valid
	}{
		{"audit", Admission{Listen: ":9443", CertFile: "tls.crt", KeyFile: "tls.key"}, ""},
		{"enforce", Admission{Mode: "enforce", Listen: ":9443", CertFile: "tls.crt", KeyFile: "tls.key"}, ""},
		{"a mode of its own", Admission{Mode: "strict", Listen: ":9443", CertFile: "tls.crt", KeyFile: "tls.key"}, `admission.mode "strict": want audit or enforce`},
		{"no listen", Admission{CertFile: "tls.crt", KeyFile: "tls.key"}, "admission.listen: required"},
		{"no certificate", Admission{Listen: ":9443"}, "admission.certFile and admission.keyFile: required"},
	} {
		got := strings.Join(tc.a.problems(), "\n")
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: problems %q, want %q", tc.name, got, tc.want)
		}
	}
}
