// Package chartrepo fetches a chart of a Helm repository, as Argo CD does
// for an Application whose source names a chart rather than a Git path:
// from an HTTP repository (its index.yaml, then the archive it lists), or
// from an OCI registry (the manifest's chart layer). A chart is read into
// memory, never written to disk, and kept by repository, name and
// version, since a published version does not change.
//
// The Helm SDK's getters would do the same two requests, but they bring a
// WebAssembly runtime for Helm's plugins into the binary; the index is
// plain YAML and the OCI layer is read through pinbot's own registry
// client, with its credentials and its plain-HTTP policy. The archive is
// read by the Helm SDK's own reader.
package chartrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"testing/fstest"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	sigsyaml "sigs.k8s.io/yaml"

	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/registry"
)

// Dir is where a fetched chart sits in the file system Fetch returns.
const Dir = "chart"

// ChartLayer is the media type of a chart's archive in an OCI registry.
const ChartLayer = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

// Bounds on what is read from a repository.
const (
	maxIndex   = 32 << 20
	maxArchive = 16 << 20
	// indexTTL is how long an HTTP repository's index is reused to
	// resolve a version range: a range follows new releases within a
	// minute.
	indexTTL = time.Minute
	// maxCharts bounds the charts kept in memory.
	maxCharts = 64
)

// Ref names one chart of a repository.
type Ref struct {
	// RepoURL is an HTTP repository ("https://charts.example/stable"), or
	// an OCI registry path with or without "oci://" ("oci://ghcr.io/org/charts").
	RepoURL string
	// Name is the chart's name in the repository.
	Name string
	// Version is an exact version, or, for an HTTP repository, a semver
	// range ("1.2.*", ">=1.0 <2"), which picks the newest version in it,
	// as Argo CD does.
	Version string
}

// OCI reports whether the repository is an OCI registry: an oci:// URL,
// or one with no scheme, as Argo CD writes an OCI Helm repository.
func (r Ref) OCI() bool {
	return strings.HasPrefix(r.RepoURL, "oci://") || !strings.Contains(r.RepoURL, "://")
}

// String reads "chart web 1.2.0 of https://charts.example".
// Credentials in the URL never show.
func (r Ref) String() string {
	return fmt.Sprintf("chart %s %s of %s", r.Name, r.Version, redact.URL(r.RepoURL))
}

// Auth is the basic-auth credentials of an HTTP repository. They are sent
// to the repository's host only, as Helm does by default.
type Auth struct {
	Username, Password string
}

// AuthFunc reads a repository's credentials when a request needs them: a
// chart already kept costs no read.
type AuthFunc func(ctx context.Context) (Auth, error)

// Chart is a fetched chart: its files under Dir, and its exact version.
type Chart struct {
	FS      fs.FS
	Version string
}

// Registry reads an OCI chart: pinbot's registry client.
type Registry interface {
	Artifact(ctx context.Context, ref string) (registry.Artifact, error)
	Blob(ctx context.Context, ref string) ([]byte, error)
}

// Repos fetches charts and keeps them. It is safe for concurrent use.
type Repos struct {
	reg  Registry
	http *http.Client
	now  func() time.Time

	mu      sync.Mutex
	charts  map[Ref]*Chart // by exact version
	indexes map[string]index
}

type index struct {
	entries map[string][]entry
	read    time.Time
}

// entry is one version of a chart in an index.yaml.
type entry struct {
	Version string   `json:"version"`
	URLs    []string `json:"urls"`
}

// New returns Repos that read OCI charts through reg.
func New(reg Registry) *Repos {
	return &Repos{reg: reg, http: &http.Client{Timeout: time.Minute}, now: time.Now, charts: map[Ref]*Chart{}, indexes: map[string]index{}}
}

// Fetch returns the chart ref names, resolving a range to the newest
// version in it; auth, when not nil, gives an HTTP repository's
// credentials. Errors name the chart and the repository.
func (rs *Repos) Fetch(ctx context.Context, ref Ref, auth AuthFunc) (*Chart, error) {
	if ref.Version == "" {
		return nil, fmt.Errorf("%s: no version: pinbot renders the version the Application names", ref)
	}
	if c := rs.cached(ref); c != nil {
		return c, nil
	}
	var (
		raw     []byte
		version = ref.Version
		err     error
	)
	if ref.OCI() {
		raw, err = rs.fetchOCI(ctx, ref)
	} else {
		var a Auth
		if auth != nil {
			if a, err = auth(ctx); err != nil {
				return nil, fmt.Errorf("%s: reading the repository's credentials: %w", ref, err)
			}
		}
		raw, version, err = rs.fetchHTTP(ctx, ref, a)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	c, err := load(raw, version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	rs.keep(Ref{RepoURL: ref.RepoURL, Name: ref.Name, Version: version}, c)
	return c, nil
}

func (rs *Repos) cached(ref Ref) *Chart {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.charts[ref]
}

func (rs *Repos) keep(ref Ref, c *Chart) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.charts) >= maxCharts {
		for k := range rs.charts { // any one: a chart is cheap to fetch again
			delete(rs.charts, k)
			break
		}
	}
	rs.charts[ref] = c
}

// fetchHTTP finds the chart's version in the repository's index and
// downloads the archive the index lists for it.
func (rs *Repos) fetchHTTP(ctx context.Context, ref Ref, auth Auth) ([]byte, string, error) {
	entries, err := rs.index(ctx, ref.RepoURL, auth)
	if err != nil {
		return nil, "", err
	}
	e, err := pick(entries[ref.Name], ref.Version)
	if err != nil {
		return nil, "", err
	}
	if len(e.URLs) == 0 {
		return nil, "", fmt.Errorf("the index lists no URL for version %s", e.Version)
	}
	u, err := resolve(ref.RepoURL, e.URLs[0])
	if err != nil {
		return nil, "", err
	}
	raw, err := rs.get(ctx, u, maxArchive, ref.RepoURL, auth)
	if err != nil {
		return nil, "", err
	}
	return raw, e.Version, nil
}

// pick returns the entry of version: the one named, else the newest in
// the range it is.
func pick(entries []entry, version string) (entry, error) {
	if len(entries) == 0 {
		return entry{}, errors.New("the repository's index.yaml lists no such chart")
	}
	for _, e := range entries {
		if e.Version == version || strings.TrimPrefix(e.Version, "v") == strings.TrimPrefix(version, "v") {
			return e, nil
		}
	}
	c, err := semver.NewConstraint(version)
	if err != nil {
		return entry{}, fmt.Errorf("version %q is not in the index, nor a semver range: %w", version, err)
	}
	var best *entry
	var bestV *semver.Version
	for i := range entries {
		v, err := semver.NewVersion(entries[i].Version)
		if err != nil || !c.Check(v) {
			continue
		}
		if bestV == nil || v.GreaterThan(bestV) {
			best, bestV = &entries[i], v
		}
	}
	if best == nil {
		return entry{}, fmt.Errorf("no version in the index matches %q", version)
	}
	return *best, nil
}

// index returns the entries of the repository's index.yaml, read again
// after indexTTL.
func (rs *Repos) index(ctx context.Context, repoURL string, auth Auth) (map[string][]entry, error) {
	rs.mu.Lock()
	i, ok := rs.indexes[repoURL]
	rs.mu.Unlock()
	if ok && rs.now().Sub(i.read) < indexTTL {
		return i.entries, nil
	}
	u, err := resolve(repoURL, "index.yaml")
	if err != nil {
		return nil, err
	}
	raw, err := rs.get(ctx, u, maxIndex, repoURL, auth)
	if err != nil {
		return nil, err
	}
	var f struct {
		Entries map[string][]entry `json:"entries"`
	}
	if err := sigsyaml.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", redact.URL(u), err)
	}
	rs.mu.Lock()
	rs.indexes[repoURL] = index{entries: f.Entries, read: rs.now()}
	rs.mu.Unlock()
	return f.Entries, nil
}

// resolve makes ref, as an index lists it, absolute against the
// repository's URL, as Helm does (the repository URL as a directory).
func resolve(repoURL, ref string) (string, error) {
	base, err := url.Parse(strings.TrimSuffix(repoURL, "/") + "/")
	if err != nil {
		return "", fmt.Errorf("repository URL %q: %w", repoURL, err)
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("chart URL %q: %w", ref, err)
	}
	return base.ResolveReference(r).String(), nil
}

// get reads u, at most limit bytes, with auth when u is on repoURL's
// host.
func (rs *Repos) get(ctx context.Context, u string, limit int64, repoURL string, auth Auth) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if auth != (Auth{}) && sameHost(u, repoURL) {
		req.SetBasicAuth(auth.Username, auth.Password)
	}
	resp, err := rs.http.Do(req)
	if err != nil { // *url.Error: its URL is redacted by net/http
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", redact.URL(u), resp.Status)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", redact.URL(u), err)
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("GET %s: larger than the %d MiB pinbot reads", redact.URL(u), limit>>20)
	}
	return raw, nil
}

func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && strings.EqualFold(ua.Host, ub.Host)
}

// fetchOCI reads the chart layer of name:version under the registry
// path.
func (rs *Repos) fetchOCI(ctx context.Context, ref Ref) ([]byte, error) {
	if _, err := semver.StrictNewVersion(strings.TrimPrefix(ref.Version, "v")); err != nil {
		return nil, fmt.Errorf("%q is not an exact version; pinbot renders an exact version of an OCI chart", ref.Version)
	}
	if rs.reg == nil {
		return nil, errors.New("no registry client to read an OCI chart with")
	}
	repo := path.Join(strings.TrimSuffix(strings.TrimPrefix(ref.RepoURL, "oci://"), "/"), ref.Name)
	a, err := rs.reg.Artifact(ctx, repo+":"+ref.Version)
	if err != nil {
		return nil, err
	}
	for _, l := range a.Layers {
		if l.MediaType == ChartLayer {
			return rs.reg.Blob(ctx, repo+"@"+l.Digest)
		}
	}
	return nil, fmt.Errorf("%s:%s holds no chart layer (%s)", repo, ref.Version, ChartLayer)
}

// load reads a chart archive into memory, under Dir, with the Helm SDK's
// archive reader, which refuses paths that leave the chart.
func load(raw []byte, version string) (*Chart, error) {
	files, err := archive.LoadArchiveFiles(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("reading the chart archive: %w", err)
	}
	m := fstest.MapFS{}
	for _, f := range files {
		name := path.Join(Dir, f.Name)
		if !fs.ValidPath(name) || !strings.HasPrefix(name, Dir+"/") {
			return nil, fmt.Errorf("the archive's file %q leaves the chart", f.Name)
		}
		m[name] = &fstest.MapFile{Data: f.Data, Mode: 0o444}
	}
	if _, ok := m[path.Join(Dir, "Chart.yaml")]; !ok {
		return nil, errors.New("the archive holds no Chart.yaml")
	}
	return &Chart{FS: m, Version: version}, nil
}
