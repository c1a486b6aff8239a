package diff

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/hook"
	"pinbot.dev/pinbot/reconciler/ignore"
	"pinbot.dev/pinbot/reconciler/internal/fixture"
	"pinbot.dev/pinbot/reconciler/object"
)

// object decodes a JSON object as the API server's responses are decoded
// (integers as int64) and gives it managed-fields entries: manager
// "pinbot" applying fieldsV1 pinbot, and another manager updating other
// (both may be "").
func objectOf(t *testing.T, js, pinbot, other string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(js)); err != nil {
		t.Fatalf("decoding %s: %s", js, err)
	}
	var mf []metav1.ManagedFieldsEntry
	if pinbot != "" {
		mf = append(mf, metav1.ManagedFieldsEntry{Manager: object.FieldManager, Operation: metav1.ManagedFieldsOperationApply,
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

func TestFields(t *testing.T) {
	web := object.Ref{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	containers := "[" + appV1 + "]"
	dry := objectOf(t, deploy(3, gitLabels, containers), gitOwns, "")
	for _, tc := range []struct {
		name   string
		dry    *unstructured.Unstructured
		live   *unstructured.Unstructured
		ignore []ignore.Rule
		want   []Field
	}{
		{name: "in sync", dry: dry, live: objectOf(t, deploy(3, gitLabels, containers), "", "")},
		{name: "replicas scaled on the cluster", dry: dry, live: objectOf(t, deploy(1, gitLabels, containers), "", ""),
			want: []Field{{Object: web, Path: "spec.replicas", Pointer: "/spec/replicas", Git: int64(3), Live: int64(1)}}},
		{name: "a label Git never set is edited: no drift",
			dry:  objectOf(t, deploy(3, `{"tier":"web","pinbot.dev/app":"shop","owner":"bob"}`, containers), gitOwns, `{"f:metadata":{"f:labels":{"f:owner":{}}}}`),
			live: objectOf(t, deploy(3, `{"tier":"web","pinbot.dev/app":"shop","owner":"bob"}`, containers), "", "")},
		{name: "a label Git sets is edited",
			dry:  dry,
			live: objectOf(t, deploy(3, `{"tier":"db","pinbot.dev/app":"shop"}`, containers), "", ""),
			want: []Field{{Object: web, Path: "metadata.labels.tier", Pointer: "/metadata/labels/tier", Git: "web", Live: "db"}}},
		{name: "a label Git sets is removed",
			dry:  dry,
			live: objectOf(t, deploy(3, `{"pinbot.dev/app":"shop"}`, containers), "", ""),
			want: []Field{{Object: web, Path: "metadata.labels.tier", Pointer: "/metadata/labels/tier", Git: "web", LiveAbsent: true}}},
		{name: "pinbot's own stamp is not drift",
			dry:  dry,
			live: objectOf(t, strings.Replace(deploy(3, `{"tier":"web","pinbot.dev/app":"other"}`, containers), `"h1"`, `"h0"`, 1), "", "")},
		{name: "a container found by its name, wherever it sits",
			dry:  objectOf(t, deploy(3, gitLabels, "["+sidecar+","+appV1+"]"), gitOwns, ""),
			live: objectOf(t, deploy(3, gitLabels, "["+sidecar+","+appV2+"]"), "", ""),
			want: []Field{{Object: web, Path: "spec.template.spec.containers[name=app].image",
				Pointer: "/spec/template/spec/containers/1/image", Git: "reg/app:v1", Live: "reg/app:v2"}}},
		{name: "a port found by its integer key",
			dry:  dry,
			live: objectOf(t, deploy(3, gitLabels, "["+appPortName+"]"), "", ""),
			want: []Field{{Object: web, Path: "spec.template.spec.containers[name=app].ports[containerPort=80,protocol=TCP].name",
				Pointer: "/spec/template/spec/containers/0/ports/0/name", Git: "http", Live: "web"}}},
		{name: "an ignore rule hides replicas", dry: dry, live: objectOf(t, deploy(1, gitLabels, containers), "", ""),
			ignore: []ignore.Rule{{Object: "apps/Deployment/web", Pointers: []string{"/spec/replicas"}}}},
		{name: "an ignore rule with a wildcard hides every image", dry: dry, live: objectOf(t, deploy(1, gitLabels, "["+appV2+"]"), "", ""),
			ignore: []ignore.Rule{{Object: "apps/Deployment/*", Pointers: []string{"/spec/template/spec/containers/*/image"}}},
			want:   []Field{{Object: web, Path: "spec.replicas", Pointer: "/spec/replicas", Git: int64(3), Live: int64(1)}}},
		{name: "an ignore rule for another object hides nothing", dry: dry, live: objectOf(t, deploy(1, gitLabels, containers), "", ""),
			ignore: []ignore.Rule{{Object: "apps/Deployment/api", Pointers: []string{"/spec/replicas"}}},
			want:   []Field{{Object: web, Path: "spec.replicas", Pointer: "/spec/replicas", Git: int64(3), Live: int64(1)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Fields(tc.dry, tc.live, tc.ignore)
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
	finalizers := objectOf(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","finalizers":["a","b"]}}`,
		`{"f:metadata":{"f:finalizers":{"v:\"b\"":{}}}}`, "")
	live := objectOf(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","finalizers":["a"]}}`, "", "")
	got, err := Fields(finalizers, live, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Field{{Object: object.Ref{Kind: "ConfigMap", Name: "c"}, Path: "metadata.finalizers[=b]", Pointer: "/metadata/finalizers/1", Git: "b", LiveAbsent: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("set drift (-want +got):\n%s", diff)
	}

	secret := objectOf(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"token":"c2VjcmV0"}}`, `{"f:data":{"f:token":{}}}`, "")
	live = objectOf(t, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"token":"b3RoZXI="}}`, "", "")
	got, err = Fields(secret, live, nil)
	if err != nil {
		t.Fatal(err)
	}
	want = []Field{{Object: object.Ref{Kind: "Secret", Name: "s"}, Path: "data.token", Pointer: "/data/token", Git: redacted, Live: redacted}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("secret drift (-want +got):\n%s", diff)
	}
	if s := got[0].String(); strings.Contains(s, "c2VjcmV0") || strings.Contains(s, "b3RoZXI=") {
		t.Errorf("secret value printed: %s", s)
	}

	if _, err := Fields(objectOf(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`, "", `{"f:data":{}}`), live, nil); err == nil ||
		!strings.Contains(err.Error(), `no managed-fields entry of manager "pinbot"`) {
		t.Errorf("a dry run without pinbot's entry: error %v", err)
	}
}

func TestDriftString(t *testing.T) {
	web := object.Ref{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	for _, tc := range []struct {
		d    Field
		want string
	}{
		{Field{Object: web, Path: "spec.replicas", Git: int64(3), Live: int64(1)}, "Deployment shop/web: spec.replicas git=3 live=1"},
		{Field{Object: web, Path: "metadata.labels.tier", Git: "web", LiveAbsent: true}, "Deployment shop/web: metadata.labels.tier git=web live=<absent>"},
		{Field{Object: web, Path: "spec.x", Git: map[string]any{"a": "b"}, Live: ""}, `Deployment shop/web: spec.x git={"a":"b"} live=""`},
		{Field{Object: web, LiveAbsent: true}, "Deployment shop/web: missing from the cluster"},
	} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

func TestCompare(t *testing.T) {
	a := fixture.Obj("v1", "ConfigMap", "web", "a", map[string]any{"data": map[string]any{"k": "v1"}})
	b := fixture.Obj("v1", "ConfigMap", "web", "b", nil)
	stamped := fixture.Stamped
	changed := a.DeepCopy()
	changed.Object["data"] = map[string]any{"k": "v2"}
	for _, tc := range []struct {
		name string
		live map[object.Ref]*unstructured.Unstructured
		out  []object.Ref
	}{
		{"synced", fixture.LiveMap(stamped(a), stamped(b)), nil},
		{"missing", fixture.LiveMap(stamped(a)), []object.Ref{object.RefOf(b)}},
		{"git moved", fixture.LiveMap(stamped(changed), stamped(b)), []object.Ref{object.RefOf(a)}},
		{"not applied by pinbot", fixture.LiveMap(a, stamped(b)), []object.Ref{object.RefOf(a)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Compare("web", []*unstructured.Unstructured{a, b}, tc.live)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.out, out); diff != "" {
				t.Errorf("out of sync (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHooksAreNeitherComparedNorHealedNorObserved(t *testing.T) {
	deploy := fixture.GitDeployment("api", "reg/app@sha256:"+strings.Repeat("a", 64))
	job := fixture.WithAnnotations(fixture.Obj("batch/v1", "Job", "web", "migrate", nil), hook.AnnotationHelmHook+"=pre-install")
	// The hook Job is gone (its TTL deleted it): the app is still Synced.
	out, err := Compare("web", []*unstructured.Unstructured{deploy, job}, fixture.LiveMap(fixture.Stamped(deploy)))
	if err != nil || len(out) != 0 {
		t.Errorf("Compare = %v %v, want nothing out of sync", out, err)
	}
	if got := fixture.Names(hook.Without([]*unstructured.Unstructured{job, deploy, fixture.ConfigMap("c")})); !cmp.Equal(got, []string{"Deployment web/api", "ConfigMap web/c"}) {
		t.Errorf("hook.Without = %q", got)
	}
	if got := fixture.Names(hook.Applicable([]*unstructured.Unstructured{fixture.ConfigMap("skip", hook.AnnotationArgoHook+"=Skip"), job, fixture.ConfigMap("bad", hook.AnnotationArgoHook+"=Nope")})); !cmp.Equal(got, []string{"Job web/migrate", "ConfigMap web/bad"}) {
		t.Errorf("hook.Applicable = %q", got)
	}
}
