package reconciler_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// argoAPIServer serves the two endpoints of Argo CD's API server pinbot
// reads, for Application app, from the spoke's real API: the resource
// tree (the namespace's Deployments, ReplicaSets and Pods) and each
// resource's live manifest. It answers only a bearer token of token.
func argoAPIServer(t *testing.T, spoke dynamic.Interface, app, ns, token string) *httptest.Server {
	t.Helper()
	kinds := []struct {
		group, version, kind, resource string
	}{{"apps", "v1", "Deployment", "deployments"}, {"apps", "v1", "ReplicaSet", "replicasets"}, {"", "v1", "Pod", "pods"}}
	fail := func(w http.ResponseWriter, code int, msg string) {
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]any{"message": msg})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			fail(w, http.StatusUnauthorized, "invalid session: token is not valid")
			return
		}
		q := r.URL.Query()
		if q.Get("appNamespace") != "argocd" {
			fail(w, http.StatusNotFound, "application not found")
			return
		}
		switch r.URL.Path {
		case "/api/v1/applications/" + app + "/resource-tree":
			var nodes []map[string]string
			for _, k := range kinds {
				list, err := spoke.Resource(schema.GroupVersionResource{Group: k.group, Version: k.version, Resource: k.resource}).Namespace(ns).List(r.Context(), metav1.ListOptions{})
				if err != nil {
					fail(w, http.StatusInternalServerError, err.Error())
					return
				}
				for _, o := range list.Items {
					nodes = append(nodes, map[string]string{"group": k.group, "version": k.version, "kind": k.kind, "namespace": ns, "name": o.GetName()})
				}
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"nodes": nodes})
		case "/api/v1/applications/" + app + "/resource":
			for _, k := range kinds {
				if k.kind != q.Get("kind") || k.group != q.Get("group") {
					continue
				}
				o, err := spoke.Resource(schema.GroupVersionResource{Group: k.group, Version: q.Get("version"), Resource: k.resource}).
					Namespace(q.Get("namespace")).Get(r.Context(), q.Get("resourceName"), metav1.GetOptions{})
				if err != nil {
					fail(w, http.StatusNotFound, err.Error())
					return
				}
				manifest, _ := o.MarshalJSON()
				_ = json.NewEncoder(w).Encode(map[string]string{"manifest": string(manifest)})
				return
			}
			fail(w, http.StatusBadRequest, "unknown kind")
		default:
			fail(w, http.StatusNotFound, "no such endpoint")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// linuxDeployment is deployment, its Pods naming their OS (spec.os): read
// through Argo CD's API, a Pod's platform is what it demands of its Node.
func linuxDeployment(replicas int, image string) string {
	return strings.Replace(deployment(replicas, image), "      nodeSelector:", "      os: {name: linux}\n      nodeSelector:", 1)
}

// TestArgoCDViaAPI: an Application on the hub deploys to a spoke whose
// credentials pinbot does not have. With via: api, pinbot reads the
// spoke's Pods through Argo CD's API server (here a real HTTP server
// answering from the spoke's API): it is Verified, a stale Pod is a
// Mismatch, and a token the server refuses leaves it unverified, with the
// token shown nowhere.
func TestArgoCDViaAPI(t *testing.T) {
	const token = "argocd-account-token-5f1e"
	sp, _, _ := startSpoke(t, "api-spoke")
	spokeDyn := dynamic.NewForConfigOrDie(sp.Config())
	srv := argoAPIServer(t, spokeDyn, "api-spoke", "api-spoke", token)
	tokenFile := filepath.Join(t.TempDir(), "argocd-token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newDeployerScenario(t, "api-spoke", "argocd", fmt.Sprintf("argocd: {url: %q, tokenFile: %q, via: api}", srv.URL, tokenFile))

	v1, stale := pushImage(t, "api-app", "v1"), pushImage(t, "api-app", "stale")
	commit := s.push(map[string]string{"app/deploy.yaml": linuxDeployment(2, v1.ref())}, "Initial")
	s.createApplication("app", "main", "")
	s.mergePatch(applicationsRes, "argocd", `{spec: {destination: {server: "https://spoke.example", namespace: api-spoke}}}`)
	applyOn(t, spokeDyn, "api-spoke", linuxDeployment(2, v1.ref()))
	s.argoSynced(commit, "web")

	_, v := s.waitStatus(rollout, "verified through Argo CD's API", func(_ *status.App, v *verdict.Verification) bool { return v != nil && v.Verified })
	if len(v.Containers) != 2 {
		t.Errorf("%d containers verified, want 2", len(v.Containers))
	}
	for _, c := range v.Containers {
		if c.Node != "spoke-amd64" || c.RunningDigest != v1.digest {
			t.Errorf("container %+v; want it on the spoke's node, running %s", c, v1.digest)
		}
	}

	applyOn(t, spokeDyn, "api-spoke", linuxDeployment(2, stale.ref()))
	s.waitStatus(rollout, "a Mismatch read through the API", func(_ *status.App, v *verdict.Verification) bool {
		return v != nil && !v.Verified && hasVerdict(v, verdict.Mismatch)
	})

	if err := os.WriteFile(tokenFile, []byte("a-revoked-token-77aa\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, _, err := s.r.Status(testCtx, s.name)
	if err == nil || st == nil || st.Verified || !strings.Contains(st.Error, "HTTP 401") {
		t.Fatalf("with a refused token: status %+v, error %v; want unverified, naming HTTP 401", st, err)
	}
	for _, secret := range []string{token, "a-revoked-token-77aa"} {
		if strings.Contains(st.Error, secret) || strings.Contains(err.Error(), secret) {
			t.Errorf("a token shows: %s", st.Error)
		}
	}
}
