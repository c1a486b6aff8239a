package chartrepo

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"pinbot.dev/pinbot/reconciler/chartrepo/chartrepotest"
	"pinbot.dev/pinbot/registry"
)

// archiveOf packs a chart named web at version into a .tgz, as helm
// package does.
func archiveOf(t *testing.T, version string, extra map[string]string) []byte {
	t.Helper()
	files := map[string]string{
		"web/Chart.yaml":  fmt.Sprintf("apiVersion: v2\nname: web\nversion: %s\n", version),
		"web/values.yaml": "image: app\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	return chartrepotest.Pack(t, files)
}

// httpRepo serves an index.yaml listing web 1.0.0, 1.1.0 and 2.0.0, and
// their archives; indexReads counts the index's reads.
func httpRepo(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var reads atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/charts/index.yaml", func(w http.ResponseWriter, _ *http.Request) {
		reads.Add(1)
		fmt.Fprint(w, `apiVersion: v1
entries:
  web:
  - {name: web, version: 2.0.0, urls: [web-2.0.0.tgz]}
  - {name: web, version: 1.1.0, urls: [web-1.1.0.tgz]}
  - {name: web, version: 1.0.0, urls: ["/charts/web-1.0.0.tgz"]}
`)
	})
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
		body := archiveOf(t, v, map[string]string{"web/templates/version.txt": v})
		mux.HandleFunc("/charts/web-"+v+".tgz", func(w http.ResponseWriter, _ *http.Request) { w.Write(body) })
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &reads
}

func TestFetchFromAnHTTPRepository(t *testing.T) {
	srv, reads := httpRepo(t)
	rs := New(nil)
	ctx := context.Background()
	for _, tc := range []struct{ version, want string }{
		{"1.0.0", "1.0.0"}, // a URL absolute on the host
		{"1.1.0", "1.1.0"}, // a URL relative to the repository
		{"1.*", "1.1.0"},   // a range: the newest in it
		{">=1.0.0 <3", "2.0.0"},
	} {
		c, err := rs.Fetch(ctx, Ref{RepoURL: srv.URL + "/charts", Name: "web", Version: tc.version}, nil)
		if err != nil {
			t.Fatalf("Fetch %s: %s", tc.version, err)
		}
		got, err := fs.ReadFile(c.FS, Dir+"/templates/version.txt")
		if err != nil || string(got) != tc.want || c.Version != tc.want {
			t.Errorf("Fetch %s: version %s, file %q (%v); want %s", tc.version, c.Version, got, err, tc.want)
		}
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("the index was read %d times within its TTL, want once", n)
	}
	if _, err := rs.Fetch(ctx, Ref{RepoURL: srv.URL + "/charts", Name: "web", Version: "3.0.0"}, nil); err == nil ||
		!strings.Contains(err.Error(), "chart web 3.0.0 of "+srv.URL) || !strings.Contains(err.Error(), `"3.0.0"`) {
		t.Errorf("a missing version: %v, want an error naming the chart, the repository and the version", err)
	}
	if _, err := rs.Fetch(ctx, Ref{RepoURL: srv.URL + "/charts", Name: "api", Version: "1.0.0"}, nil); err == nil || !strings.Contains(err.Error(), "lists no such chart") {
		t.Errorf("a missing chart: %v", err)
	}
}

func TestFetchFromAnOCIRegistry(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	layer := static.NewLayer(archiveOf(t, "0.3.0", nil), types.MediaType(ChartLayer))
	img, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layer})
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.ConfigMediaType(img, "application/vnd.cncf.helm.config.v1+json")
	ref, err := name.ParseReference(host+"/charts/web:0.3.0", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	reg, err := registry.New()
	if err != nil {
		t.Fatal(err)
	}
	rs := New(reg)
	for _, repoURL := range []string{"oci://" + host + "/charts", host + "/charts"} {
		c, err := rs.Fetch(context.Background(), Ref{RepoURL: repoURL, Name: "web", Version: "0.3.0"}, nil)
		if err != nil {
			t.Fatalf("Fetch from %s: %s", repoURL, err)
		}
		if got, _ := fs.ReadFile(c.FS, Dir+"/Chart.yaml"); !strings.Contains(string(got), "version: 0.3.0") {
			t.Errorf("Chart.yaml from %s: %q", repoURL, got)
		}
	}
	if _, err := rs.Fetch(context.Background(), Ref{RepoURL: host + "/charts", Name: "web", Version: "0.*"}, nil); err == nil || !strings.Contains(err.Error(), "not an exact version") {
		t.Errorf("a range of an OCI chart: %v, want it refused", err)
	}
}

func TestLoadRefusesAnArchiveThatLeavesTheChart(t *testing.T) {
	raw := archiveOf(t, "1.0.0", map[string]string{"web/../../escape.yaml": "x: 1\n"})
	if c, err := load(raw, "1.0.0"); err == nil {
		t.Errorf("an archive with web/../../escape.yaml loaded: %v", c.FS)
	}
}

func TestErrorsHideCredentials(t *testing.T) {
	srv, _ := httpRepo(t)
	u := strings.Replace(srv.URL, "http://", "http://reader:s3cret@", 1) + "/nowhere"
	_, err := New(nil).Fetch(context.Background(), Ref{RepoURL: u, Name: "web", Version: "1.0.0"}, nil)
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error %v, want one that does not show the password", err)
	}
}

func TestFetchSendsCredentialsToTheRepositoryHostOnly(t *testing.T) {
	body := archiveOf(t, "1.0.0", nil)
	var elsewhere *httptest.Server
	var sawAuth atomic.Bool
	elsewhere = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := r.BasicAuth(); ok {
			sawAuth.Store(true)
		}
		w.Write(body)
	}))
	t.Cleanup(elsewhere.Close)
	repo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "reader" || p != "s3cret" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, "entries:\n  web: [{version: 1.0.0, urls: [%q]}]\n", elsewhere.URL+"/web-1.0.0.tgz")
	}))
	t.Cleanup(repo.Close)
	calls := 0
	auth := func(context.Context) (Auth, error) { calls++; return Auth{Username: "reader", Password: "s3cret"}, nil }
	rs := New(nil)
	if _, err := rs.Fetch(context.Background(), Ref{RepoURL: repo.URL, Name: "web", Version: "1.0.0"}, nil); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("without credentials: %v, want the 401", err)
	}
	if _, err := rs.Fetch(context.Background(), Ref{RepoURL: repo.URL, Name: "web", Version: "1.0.0"}, auth); err != nil {
		t.Fatal(err)
	}
	if sawAuth.Load() {
		t.Error("the credentials were sent to the archive's other host")
	}
	if _, err := rs.Fetch(context.Background(), Ref{RepoURL: repo.URL, Name: "web", Version: "1.0.0"}, auth); err != nil || calls != 1 {
		t.Errorf("a kept chart: %v, credentials read %d times, want once", err, calls)
	}
}
