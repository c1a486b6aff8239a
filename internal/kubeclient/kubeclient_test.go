package kubeclient

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/internal/logctx"
)

// encode writes obj as the API server would in content type ct.
func encode(t *testing.T, w http.ResponseWriter, ct string, code int, obj runtime.Object) {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), ct)
	if !ok {
		t.Fatalf("no serializer for %s", ct)
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(code)
	if err := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion).Encode(obj, w); err != nil {
		t.Error(err)
	}
}

func TestSpeaksProtobufAndStillReadsJSON(t *testing.T) {
	var accepts, sent []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accepts = append(accepts, r.Header.Get("Accept"))
		sent = append(sent, r.Header.Get("Content-Type"))
		switch {
		case r.Method == http.MethodPost:
			encode(t, w, runtime.ContentTypeProtobuf, http.StatusCreated, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "made", Namespace: "ns"}})
		case strings.HasSuffix(r.URL.Path, "/pods/web"):
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"},
				Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", ImageID: "registry.example/app@sha256:" + strings.Repeat("a", 64)}}}}
			encode(t, w, runtime.ContentTypeProtobuf, http.StatusOK, pod)
		default: // a proxy's or an old server's JSON
			status := apierrors.NewNotFound(corev1.Resource("pods"), "gone").Status()
			encode(t, w, runtime.ContentTypeJSON, http.StatusNotFound, &status)
		}
	}))
	defer srv.Close()
	kube, err := New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	pod, err := kube.CoreV1().Pods("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := pod.Status.ContainerStatuses[0].ImageID; !strings.HasSuffix(got, strings.Repeat("a", 64)) {
		t.Errorf("imageID read from protobuf = %q", got)
	}
	if !strings.HasPrefix(accepts[0], runtime.ContentTypeProtobuf) {
		t.Errorf("Accept = %q, want protobuf first", accepts[0])
	}

	if _, err := kube.CoreV1().Pods("ns").Get(ctx, "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a JSON Status answer: got %v, want NotFound", err)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "made"}}
	if _, err := kube.CoreV1().ConfigMaps("ns").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := sent[len(sent)-1]; got != runtime.ContentTypeProtobuf {
		t.Errorf("a create's body sent as %q, want protobuf", got)
	}
}

func TestLeavesTheCallersConfigAlone(t *testing.T) {
	rc := &rest.Config{Host: "https://example.invalid"}
	if _, err := New(rc); err != nil {
		t.Fatal(err)
	}
	if rc.ContentType != "" || rc.AcceptContentTypes != "" {
		t.Errorf("the caller's config changed: %q, %q", rc.ContentType, rc.AcceptContentTypes)
	}
}

// TestLogsEachRequestAtDebug: with a debug logger in the request's
// context (`pinbot -v`), each request is logged with its method, path and
// status; at info level nothing is.
func TestLogsEachRequestAtDebug(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := apierrors.NewNotFound(corev1.Resource("pods"), "gone").Status()
		encode(t, w, runtime.ContentTypeJSON, http.StatusNotFound, &status)
	}))
	defer srv.Close()
	kube, err := New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		level slog.Level
		want  string
	}{
		{slog.LevelDebug, `msg="kube request" method=GET`},
		{slog.LevelInfo, ""},
	} {
		var buf bytes.Buffer
		ctx := logctx.Into(context.Background(), slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level})))
		_, _ = kube.CoreV1().Pods("ns").Get(ctx, "gone", metav1.GetOptions{})
		got := buf.String()
		if tc.want == "" && got != "" || tc.want != "" && (!strings.Contains(got, tc.want) || !strings.Contains(got, "path=/api/v1/namespaces/ns/pods/gone") || !strings.Contains(got, `status="404 Not Found"`)) {
			t.Errorf("at %s the log says %q; want %q", tc.level, got, tc.want)
		}
	}
}
