package reconciler

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// object decodes a JSON object as the API server's responses are decoded
// (integers as int64) and gives it managed-fields entries: manager
// "pinbot" applying fieldsV1 pinbot, and another manager updating other
// (both may be "").
func object(t *testing.T, js, pinbot, other string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatalf("decoding %s: %s", js, err)
	}
	var mf []metav1.ManagedFieldsEntry
	if pinbot != "" {
		mf = append(mf, metav1.ManagedFieldsEntry{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(pinbot)}})
	}
	if other != "" {
		mf = append(mf, metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(other)}})
	}
	u.SetManagedFields(mf)
	return u
}

// deploy is a Deployment web in namespace shop; replicas, the tier label
// and the containers vary.
func deploy(replicas int, labels, containers string) string {
	return `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop","labels":` + labels +
		`,"annotations":{"pinbot.dev/config-hash":"h1"}},"spec":{"replicas":` + strconv.Itoa(replicas) +
		`,"template":{"spec":{"containers":` + containers + `}}},"status":{"replicas":1}}`
}

// gitOwns is what pinbot's apply of deploy owns: replicas, the tier label,
// the app container's name, image and ports, and the stamp.
const gitOwns = `{"f:metadata":{"f:labels":{"f:tier":{},"f:pinbot.dev/app":{}},"f:annotations":{"f:pinbot.dev/config-hash":{}}},` +
	`"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{},` +
	`"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{}}}}}}}}}`

const (
	gitLabels   = `{"tier":"web","pinbot.dev/app":"shop"}`
	appV1       = `{"name":"app","image":"reg/app:v1","ports":[{"containerPort":80,"protocol":"TCP","name":"http"}]}`
	appV2       = `{"name":"app","image":"reg/app:v2","ports":[{"containerPort":80,"protocol":"TCP","name":"http"}]}`
	appPortName = `{"name":"app","image":"reg/app:v1","ports":[{"containerPort":80,"protocol":"TCP","name":"web"}]}`
	sidecar     = `{"name":"proxy","image":"reg/proxy:v1"}`
)

func TestDriftOf(t *testing.T) {
	web := ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	containers := "[" + appV1 + "]"
	dry := object(t, deploy(3, gitLabels, containers), gitOwns, "")
	for _, tc := range []struct {
		name   string
		dry    *unstructured.Unstructured
		live   *unstructured.Unstructured
		ignore []IgnoreRule
		want   []Drift
	}{
		{name: "in sync", dry: dry, live: object(t, deploy(3, gitLabels, containers), "", "")},
		{name: "replicas scaled on the cluster", dry: dry, live: object(t, deploy(1, gitLabels, containers), "", ""),
			want: []Drift{{Object: web, Path: "spec.replicas", Pointer: "/spec/replicas", Git: int64(3), Live: int64(1)}}},
		{name: "a label Git never set is edited: no drift",
			dry:  object(t, deploy(3, `{"tier":"web","pinbot.dev/app":"shop","owner":"bob"}`, containers), gitOwns, `{"f:metadata":{"f:labels":{"f:owner":{}}}}`),
			live: object(t, deploy(3, `{"tier":"web","pinbot.dev/app":"shop","owner":"bob"}`, containers), "", "")},
		{name: "a label Git sets is edited",
			dry:  dry,
			live: object(t, deploy(3, `{"tier":"db","pinbot.dev/app":"shop"}`, containers), "", ""),
			want: []Drift{{Object: web, Path: "metadata.labels.tier", Pointer: "/metadata/labels/tier", Git: "web", Live: "db"}}},
		{name: "a label Git sets is removed",
			dry:  dry,
			live: object(t, deploy(3, `{"pinbot.dev/app":"shop"}`, containers), "", ""),
			want: []Drift{{Object: web, Path: "metadata.labels.tier", Pointer: "/metadata/labels/tier", Git: "web", LiveAbsent: true}}},
		{name: "pinbot's own stamp is not drift",
			dry:  dry,
			live: object(t, strings.Replace(deploy(3, `{"tier":"web","pinbot.dev/app":"other"}`, containers), `"h1"`, `"h0"`, 1), "", "")},
		{name: "a container found by its name, wherever it sits",
			dry:  object(t, deploy(3, gitLabels, "["+sidecar+","+appV1+"]"), gitOwns, ""),
			live: object(t, deploy(3, gitLabels, "["+sidecar+","+appV2+"]"), "", ""),
			want: []Drift{{Object: web, Path: "spec.template.spec.containers[name=app].image",
				Pointer: "/spec/template/spec/containers/1/image", Git: "reg/app:v1", Live: "reg/app:v2"}}},
		{name: "a port found by its integer key",
			dry:  dry,
			live: object(t, deploy(3, gitLabels, "["+appPortName+"]"), "", ""),
			want: []Drift{{Object: web, Path: "spec.template.spec.containers[name=app].ports[containerPort=80,protocol=TCP].name",
				Pointer: "/spec/template/spec/containers/0/ports/0/name", Git: "http", Live: "web"}}},
		{name: "an ignore rule hides replicas", dry: dry, live: object(t, deploy(1, gitLabels, containers), "", ""),
			ignore: []IgnoreRule{{Object: "apps/Deployment/web", Pointers: []string{"/spec/replicas"}}}},
		{name: "an ignore rule with a wildcard hides every image", dry: dry, live: object(t, deploy(1, gitLabels, "["+appV2+"]"), "", ""),
			ignore: []IgnoreRule{{Object: "apps/Deployment/*", Pointers: []string{"/spec/template/spec/containers/*/image"}}},
			want:   []Drift{{Object: web, Path: "spec.replicas", Pointer: "/spec/replicas", Git: int64(3), Live: int64(1)}}},
		{name: "an ignore rule for another object hides nothing", dry: dry, live: object(t, deploy(1, gitLabels, containers), "", ""),
			ignore: []IgnoreRule{{Object: "apps/Deployment/api", Pointers: []string{"/spec/replicas"}}},
			want:   []Drift{{Object: web, Path: "spec.replicas", Pointer: "/spec/replicas", Git: int64(3), Live: int64(1)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DriftOf(tc.dry, tc.live, tc.ignore)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("drift (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDriftOfSetsAndSecrets(t *testing.T) {
	finalizers := object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","finalizers":["a","b"]}}`,
		`{"f:metadata":{"f:finalizers":{"v:\"b\"":{}}}}`, "")
	live := object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","finalizers":["a"]}}`, "", "")
	got, err := DriftOf(finalizers, live, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Drift{{Object: ObjectRef{Kind: "ConfigMap", Name: "c"}, Path: "metadata.finalizers[=b]", Pointer: "/metadata/finalizers/1", Git: "b", LiveAbsent: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("set drift (-want +got):\n%s", diff)
	}

	secret := object(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"token":"c2VjcmV0"}}`, `{"f:data":{"f:token":{}}}`, "")
	live = object(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"token":"b3RoZXI="}}`, "", "")
	got, err = DriftOf(secret, live, nil)
	if err != nil {
		t.Fatal(err)
	}
	want = []Drift{{Object: ObjectRef{Kind: "Secret", Name: "s"}, Path: "data.token", Pointer: "/data/token", Git: redacted, Live: redacted}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("secret drift (-want +got):\n%s", diff)
	}
	if s := got[0].String(); strings.Contains(s, "c2VjcmV0") || strings.Contains(s, "b3RoZXI=") {
		t.Errorf("secret value printed: %s", s)
	}

	if _, err := DriftOf(object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`, "", `{"f:data":{}}`), live, nil); err == nil ||
		!strings.Contains(err.Error(), `no managed-fields entry of manager "pinbot"`) {
		t.Errorf("a dry run without pinbot's entry: error %v", err)
	}
}

func TestDriftString(t *testing.T) {
	web := ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	for _, tc := range []struct {
		d    Drift
		want string
	}{
		{Drift{Object: web, Path: "spec.replicas", Git: int64(3), Live: int64(1)}, "Deployment shop/web: spec.replicas git=3 live=1"},
		{Drift{Object: web, Path: "metadata.labels.tier", Git: "web", LiveAbsent: true}, "Deployment shop/web: metadata.labels.tier git=web live=<absent>"},
		{Drift{Object: web, Path: "spec.x", Git: map[string]any{"a": "b"}, Live: ""}, `Deployment shop/web: spec.x git={"a":"b"} live=""`},
		{Drift{Object: web, LiveAbsent: true}, "Deployment shop/web: missing from the cluster"},
	} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}
