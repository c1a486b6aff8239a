package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	v2util "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"helm.sh/helm/v4/pkg/ignore"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"helm.sh/helm/v4/pkg/strvals"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"
)

// Helm holds what a Helm chart render takes besides the chart: the
// settings of `helm template`, and of an Argo CD Application's
// spec.source.helm. The zero value renders the chart's defaults as a
// release named after the chart's directory.
type Helm struct {
	// ReleaseName is .Release.Name. Default: the chart directory's name.
	ReleaseName string
	// Namespace is .Release.Namespace. Default "default".
	Namespace string
	// ValueFiles are values files, slash paths relative to the chart
	// directory, that may not leave the repository. Later files override
	// earlier ones, and all override the chart's values.yaml.
	ValueFiles []string
	// Values override the value files (Argo CD's values and valuesObject,
	// merged by the caller, valuesObject winning).
	Values map[string]any
	// Parameters override everything else, as `helm --set` (or
	// `--set-string` when ForceString) does, in order.
	Parameters []Parameter
}

// Parameter is one `--set name=value` of a Helm render.
type Parameter struct {
	Name        string
	Value       string
	ForceString bool
}

// Capabilities are what the cluster tells a chart through
// .Capabilities: its version ("v1.34.2") and its API versions ("apps/v1",
// "apps/v1/Deployment"). Discover reads them from a cluster.
type Capabilities struct {
	KubeVersion string
	APIVersions []string
}

// Option changes how Dir renders.
type Option func(*options)

type options struct {
	ctx      context.Context
	helm     *Helm
	release  Helm // ReleaseName and Namespace only; see WithRelease
	caps     *Capabilities
	discover func() (Capabilities, error)
	// overrides are a deployer's kustomize fields (WithOverrides).
	overrides map[string]any
}

func (o options) context() context.Context {
	if o.ctx == nil {
		return context.Background()
	}
	return o.ctx
}

// WithContext stops a render when ctx ends (see MaxRenderTime).
func WithContext(ctx context.Context) Option { return func(o *options) { o.ctx = ctx } }

// WithHelm renders a chart directory with h. Without it a chart renders
// with its defaults.
func WithHelm(h Helm) Option { return func(o *options) { o.helm = &h } }

// WithRelease names a chart's release and its namespace when the
// directory turns out to be a chart, and is ignored otherwise: the
// defaults of a caller that does not know what the directory holds.
// WithHelm's ReleaseName and Namespace, when set, win.
func WithRelease(name, namespace string) Option {
	return func(o *options) { o.release = Helm{ReleaseName: name, Namespace: namespace} }
}

// WithCapabilities tells a chart what cluster it renders for. Without it
// Helm's defaults hold: the Kubernetes version of the client library the
// binary was built with (v1.20 under `go test`) and the built-in API
// versions, so charts reading .Capabilities should get the cluster's.
func WithCapabilities(c Capabilities) Option { return func(o *options) { o.caps = &c } }

// WithDiscovery is WithCapabilities for a caller that learns them from the
// cluster: discover is called only when the directory is a chart, so
// rendering plain YAML or a kustomization never waits on discovery. Its
// error stops the render.
func WithDiscovery(discover func() (Capabilities, error)) Option {
	return func(o *options) { o.discover = discover }
}

// chartFile marks a directory as a Helm chart.
const chartFile = "Chart.yaml"

// renderChart renders the chart at rel, as `helm template` would with the
// settings in o, without ever touching the network: dependencies come from
// the chart's charts/ directory, and lookup renders empty.
//
// The objects come in the order a sync runs them: the CRDs of crds/
// directories, the pre-install and pre-upgrade hooks, the templates'
// objects in Helm's install order, then the post-install and post-upgrade
// hooks. Hooks keep their helm.sh/hook annotations, from which the
// reconciler's waves run them first and last. Test hooks, and hooks that
// run only on delete or rollback, are left out.
func renderChart(fsys fs.FS, rel string, o options) ([]*unstructured.Unstructured, error) {
	ch, err := loadChart(fsys, rel)
	if err != nil {
		return nil, &Error{File: path.Join(rel, chartFile), Err: fmt.Errorf("loading the Helm chart: %w", err)}
	}
	name := ch.Name()
	fail := func(err error) error {
		return &Error{File: rel, Err: fmt.Errorf("helm chart %q: %w", name, err)}
	}
	if err := checkDependencies(ch); err != nil {
		return nil, fail(err)
	}
	h := Helm{}
	if o.helm != nil {
		h = *o.helm
	}
	if h.ReleaseName == "" {
		h.ReleaseName = o.release.ReleaseName
	}
	if h.Namespace == "" {
		h.Namespace = o.release.Namespace
	}
	if h.ReleaseName == "" {
		h.ReleaseName = path.Base(path.Clean("/" + rel))
		if h.ReleaseName == "/" {
			h.ReleaseName = name
		}
	}
	if h.Namespace == "" {
		h.Namespace = "default"
	}
	vals, err := values(fsys, rel, h)
	if err != nil {
		return nil, err
	}
	if o.caps == nil && o.discover != nil {
		c, err := o.discover()
		if err != nil {
			return nil, fail(err)
		}
		o.caps = &c
	}
	caps, err := capabilities(o.caps)
	if err != nil {
		return nil, fail(err)
	}
	if v := ch.Metadata.KubeVersion; v != "" && !v2util.IsCompatibleRange(v, caps.KubeVersion.String()) {
		return nil, fail(fmt.Errorf("chart requires kubeVersion %s, the cluster runs %s", v, caps.KubeVersion.Version))
	}
	if err := v2util.ProcessDependencies(ch, vals); err != nil {
		return nil, fail(fmt.Errorf("processing dependencies: %w", err))
	}
	top, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, common.ReleaseOptions{
		Name: h.ReleaseName, Namespace: h.Namespace, Revision: 1, IsInstall: true,
	}, caps, false)
	if err != nil {
		return nil, fail(fmt.Errorf("values: %w", err))
	}
	var eng engine.Engine // no cluster client: lookup renders empty
	files, err := eng.RenderWithContext(o.context(), ch, top)
	if err != nil {
		return nil, templateError(rel, name, err)
	}
	for k := range files {
		if strings.HasSuffix(k, "NOTES.txt") {
			delete(files, k)
		}
	}
	// Hooks come sorted by weight, then kind; manifests in install order.
	hooks, manifests, err := releaseutil.SortManifests(files, caps.APIVersions, releaseutil.InstallOrder)
	if err != nil {
		return nil, fail(err)
	}
	var pre, post []*release.Hook
	for _, hk := range hooks {
		switch hookPhase(hk) {
		case preSync:
			pre = append(pre, hk)
		case postSync:
			post = append(post, hk)
		}
	}
	var objs []*unstructured.Unstructured
	add := func(file, data string) error {
		got, err := Decode(chartPath(rel, name, file), []byte(data))
		objs = append(objs, got...)
		return err
	}
	for _, c := range ch.CRDObjects() {
		if err := add(c.Filename, string(c.File.Data)); err != nil {
			return nil, err
		}
	}
	for _, hk := range pre {
		if err := add(hk.Path, hk.Manifest); err != nil {
			return nil, err
		}
	}
	for _, m := range manifests {
		if err := add(m.Name, m.Content); err != nil {
			return nil, err
		}
	}
	for _, hk := range post {
		if err := add(hk.Path, hk.Manifest); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

type phase int

const (
	skip phase = iota
	preSync
	postSync
)

// hookPhase says when a hook runs in a sync: before the other objects
// (pre-install, pre-upgrade), after them (post-install, post-upgrade), or
// never (test hooks, and hooks that run only on delete or rollback).
func hookPhase(h *release.Hook) phase {
	p := skip
	for _, e := range h.Events {
		switch e {
		case release.HookTest:
			return skip
		case release.HookPreInstall, release.HookPreUpgrade:
			p = preSync
		case release.HookPostInstall, release.HookPostUpgrade:
			if p == skip {
				p = postSync
			}
		}
	}
	return p
}

// chartPath turns a Helm file name ("web/templates/x.yaml",
// "web/charts/db/crds/c.yaml") into the slash path inside the repository.
func chartPath(rel, name, file string) string {
	file = filepath.ToSlash(file)
	if rest, ok := strings.CutPrefix(file, name+"/"); ok {
		return path.Join(rel, rest)
	}
	return path.Join(rel, file)
}

// templateLine finds the template and line in a Go template error.
var templateLine = regexp.MustCompile(`([^\s:"<>]+/templates/[^\s:"<>]+):(\d+)`)

// templateError names the chart and, when the engine says, the template
// and line at fault.
func templateError(rel, name string, err error) error {
	e := &Error{File: rel, Err: fmt.Errorf("helm chart %q: %w", name, err)}
	if m := templateLine.FindStringSubmatch(err.Error()); m != nil {
		e.File = chartPath(rel, name, m[1])
		e.Line, _ = strconv.Atoi(m[2])
	}
	return e
}

// checkDependencies refuses a chart whose Chart.yaml names a dependency
// that its charts/ directory does not hold: rendering it would need the
// network (`helm dependency build`), and pinbot fetches nothing.
func checkDependencies(ch *chart.Chart) error {
	have := map[string]bool{}
	for _, d := range ch.Dependencies() {
		have[d.Name()] = true
	}
	var errs []error
	for _, d := range ch.Metadata.Dependencies {
		if have[d.Name] {
			continue
		}
		errs = append(errs, fmt.Errorf("dependency %q (%s) is not in charts/: pinbot fetches nothing, so run `helm dependency build` and commit charts/", d.Name, d.Repository))
	}
	for _, sub := range ch.Dependencies() {
		if err := checkDependencies(sub); err != nil {
			errs = append(errs, fmt.Errorf("in %q: %w", sub.Name(), err))
		}
	}
	return errors.Join(errs...)
}

// loadChart loads the chart at rel of fsys as Helm's loader.LoadDir loads
// a directory: .helmignore honoured, a UTF-8 BOM dropped, the chart's
// whole size bounded. A symbolic link is never followed, and any file
// that is not regular is refused, as Helm refuses irregular files.
func loadChart(fsys fs.FS, rel string) (*chart.Chart, error) {
	rules := ignore.Empty()
	if b, err := readFile(fsys, path.Join(rel, ignore.HelmIgnore)); err == nil {
		if rules, err = ignore.Parse(bytes.NewReader(b)); err != nil {
			return nil, err
		}
	}
	rules.AddDefaults()
	var files []*archive.BufferedFile
	var total int64
	err := fs.WalkDir(fsys, rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		n := strings.TrimPrefix(p, rel+"/")
		if p == rel || rel == "." && p == "." {
			return nil
		}
		if rel == "." {
			n = p
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rules.Ignore(n, fi) {
				return fs.SkipDir
			}
			return nil
		}
		if rules.Ignore(n, fi) {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file: pinbot follows no link in a repository", p)
		}
		data, err := readFile(fsys, p)
		if err != nil {
			return fmt.Errorf("reading %s: %w", p, err)
		}
		if total += int64(len(data)); total > archive.MaxDecompressedChartSize {
			return fmt.Errorf("the chart is larger than %d bytes", archive.MaxDecompressedChartSize)
		}
		files = append(files, &archive.BufferedFile{Name: n, Data: bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return loader.LoadFiles(files)
}

// values merges h's value files, values and parameters, in that order of
// precedence (lowest first), as `helm template -f … --set …` would. The
// chart's own values.yaml is merged under them by the render.
func values(fsys fs.FS, rel string, h Helm) (map[string]any, error) {
	out := map[string]any{}
	for _, f := range h.ValueFiles {
		name := path.Clean(path.Join(rel, f))
		if path.IsAbs(f) || name == ".." || strings.HasPrefix(name, "../") {
			return nil, &Error{File: rel, Err: fmt.Errorf("values file %q is outside the repository", f)}
		}
		if _, err := fs.Stat(fsys, name); err != nil {
			return nil, &Error{File: name, Err: errors.New("values file not found in the repository")}
		}
		b, err := readFile(fsys, name)
		if err != nil {
			return nil, &Error{File: name, Err: fmt.Errorf("reading the values file: %w", err)}
		}
		v := map[string]any{}
		if err := sigsyaml.Unmarshal(b, &v); err != nil {
			line, msg := splitYAMLLine(err)
			return nil, &Error{File: name, Line: line, Err: fmt.Errorf("values file: %s", msg)}
		}
		out = mergeMaps(out, v)
	}
	out = mergeMaps(out, copyMap(h.Values))
	for _, p := range h.Parameters {
		set := p.Name + "=" + escapeCommas(p.Value)
		parse := strvals.ParseInto
		if p.ForceString {
			parse = strvals.ParseIntoString
		}
		if err := parse(set, out); err != nil {
			return nil, &Error{File: rel, Err: fmt.Errorf("helm parameter %q: %w", p.Name, err)}
		}
	}
	return out, nil
}

// escapeCommas keeps a parameter's value one value: `--set` would split it
// at unescaped commas (Argo CD escapes them too).
func escapeCommas(v string) string {
	var b strings.Builder
	for i, r := range v {
		if r == ',' && (i == 0 || v[i-1] != '\\') {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mergeMaps merges b into a, recursing into maps both hold; b wins.
func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// copyMap deep-copies nested maps so a render never writes into the
// caller's values.
func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if vm, ok := v.(map[string]any); ok {
			v = copyMap(vm)
		}
		out[k] = v
	}
	return out
}

// capabilities turns c into Helm's, from Helm's defaults when c is nil.
func capabilities(c *Capabilities) (*common.Capabilities, error) {
	caps := common.DefaultCapabilities.Copy()
	if c == nil {
		return caps, nil
	}
	if c.KubeVersion != "" {
		kv, err := common.ParseKubeVersion(c.KubeVersion)
		if err != nil {
			return nil, fmt.Errorf("kubernetes version %q: %w", c.KubeVersion, err)
		}
		caps.KubeVersion = *kv
	}
	if len(c.APIVersions) > 0 {
		set := append(common.VersionSet{}, c.APIVersions...)
		sort.Strings(set)
		caps.APIVersions = set
	}
	return caps, nil
}
