package kubemetrics

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// client-go reports each request to an API server, and how long its rate
// limiter held it, once Collectors was called.
func TestKubeRequestsAndThrottling(t *testing.T) {
	Collectors()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"35","gitVersion":"v1.35.0"}`))
	}))
	defer srv.Close()
	// A burst of 1 at 20 a second: the second and third requests wait
	// about 50 ms each.
	kc, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: 20, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	var before dto.Metric
	if err := kubeThrottled.WithLabelValues("GET", "").(prometheus.Histogram).Write(&before); err != nil {
		t.Fatal(err)
	}
	requests := testutil.ToFloat64(kubeRequests.WithLabelValues("GET", "2xx"))
	for range 3 {
		if _, err := kc.Discovery().ServerVersion(); err != nil {
			t.Fatal(err)
		}
	}
	if got := testutil.ToFloat64(kubeRequests.WithLabelValues("GET", "2xx")) - requests; got != 3 {
		t.Errorf("pinbot_kube_requests_total{GET,2xx} rose by %v, want 3", got)
	}
	var after dto.Metric
	if err := kubeThrottled.WithLabelValues("GET", "").(prometheus.Histogram).Write(&after); err != nil {
		t.Fatal(err)
	}
	n := after.GetHistogram().GetSampleCount() - before.GetHistogram().GetSampleCount()
	held := after.GetHistogram().GetSampleSum() - before.GetHistogram().GetSampleSum()
	if n != 3 || held < 0.05 {
		t.Errorf("throttled: %d requests held %.3f s in all, want 3 held at least 0.05 s", n, held)
	}
}

func TestResourceOf(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/shop/pods":                                     "pods",
		"/api/v1/namespaces/shop/pods/web-1":                               "pods",
		"/api/v1/namespaces/shop/pods/web-1/log":                           "pods/log",
		"/api/v1/pods":                                                     "pods",
		"/api/v1/namespaces/shop":                                          "namespaces",
		"/api/v1/namespaces":                                               "namespaces",
		"/apis/coordination.k8s.io/v1/namespaces/pinbot/leases/pinbot":     "leases.coordination.k8s.io",
		"/apis/argoproj.io/v1alpha1/namespaces/argocd/applications":        "applications.argoproj.io",
		"/apis/apps/v1/namespaces/shop/deployments/web/status":             "deployments/status.apps",
		"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/proofs.x": "customresourcedefinitions.apiextensions.k8s.io",
		"/version":    "",
		"/api":        "",
		"/api/v1":     "",
		"/apis/apps":  "",
		"/openapi/v3": "",
	} {
		if got, _ := Resource(path); got != want {
			t.Errorf("Resource(%q) = %q, want %q", path, got, want)
		}
	}
}
