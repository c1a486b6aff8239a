package main

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	"gopkg.in/yaml.v3"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/registry"
)

// images are the release's pushed images, which the chart pins.
type images struct {
	plain, debug name.Digest
}

// packageChart writes pinbot-VERSION.tgz: the chart at the release's
// version and appVersion, with every file at the release's time. When
// the images were pushed, its values name them by digest, so that
// installing the chart runs exactly what was signed.
func (r *release) packageChart(imgs *images) (string, error) {
	ch, err := loader.LoadDir(filepath.Join(r.o.dir, r.o.chartDir))
	if err != nil {
		return "", fmt.Errorf("loading the chart %s: %w", r.o.chartDir, err)
	}
	ch.Metadata.Version = r.o.chartVersion()
	ch.Metadata.AppVersion = r.o.version
	if imgs != nil {
		if err := pinValues(ch, map[string]string{
			"repository":  r.o.image.Name(),
			"tag":         r.o.version,
			"digest":      imgs.plain.DigestStr(),
			"debugDigest": imgs.debug.DigestStr(),
		}); err != nil {
			return "", err
		}
	}
	ch.ModTime, ch.SchemaModTime = r.o.created, r.o.created
	for _, files := range [][]*common.File{ch.Raw, ch.Templates, ch.Files} {
		for _, f := range files {
			f.ModTime = r.o.created
		}
	}
	p, err := chartutil.Save(ch, r.o.out)
	if err != nil {
		return "", fmt.Errorf("packaging the chart: %w", err)
	}
	r.logf("chart %s", filepath.Base(p))
	return p, nil
}

// pinValues sets the image's keys in the chart's values.yaml, keeping its
// comments.
func pinValues(ch *chart.Chart, set map[string]string) error {
	for _, f := range ch.Raw {
		if f.Name != chartutil.ValuesfileName {
			continue
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(f.Data, &doc); err != nil || len(doc.Content) == 0 {
			return fmt.Errorf("reading the chart's values.yaml: %w", err)
		}
		img := lookup(doc.Content[0], "image")
		if img == nil || img.Kind != yaml.MappingNode {
			return fmt.Errorf("the chart's values.yaml has no image: mapping to pin")
		}
		for _, k := range []string{"repository", "tag", "digest", "debugDigest"} {
			v := lookup(img, k)
			if v == nil {
				return fmt.Errorf("the chart's values.yaml has no image.%s to pin", k)
			}
			v.Kind, v.Tag, v.Style, v.Value = yaml.ScalarNode, "!!str", yaml.DoubleQuotedStyle, set[k]
		}
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(&doc); err != nil {
			return err
		}
		f.Data = buf.Bytes()
		vals, err := common.ReadValues(f.Data)
		if err != nil {
			return err
		}
		ch.Values = vals
		return nil
	}
	return fmt.Errorf("the chart has no values.yaml")
}

// lookup is the value of key in the mapping m, or nil.
func lookup(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// pushChart pushes the packaged chart as an OCI artifact to
// REGISTRY/ORG/charts/pinbot:CHART_VERSION with Helm's registry client,
// as helm push does, and returns its digest. Helm's client takes no
// context: the push runs to its end.
func (r *release) pushChart(tgz string) (name.Digest, error) {
	data, err := os.ReadFile(tgz)
	if err != nil {
		return name.Digest{}, err
	}
	opts := []registry.ClientOption{registry.ClientOptWriter(r.stderr)}
	if r.o.plainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	} else if r.o.transport != nil {
		opts = append(opts, registry.ClientOptHTTPClient(&http.Client{Transport: r.o.transport}))
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("pushing the chart: %w", err)
	}
	ref := r.o.chart.Tag(r.o.chartVersion())
	r.logf("pushing oci://%s", ref)
	res, err := client.Push(data, ref.String(), registry.PushOptCreationTime(r.o.created.Format("2006-01-02T15:04:05Z07:00")))
	if err != nil {
		return name.Digest{}, fmt.Errorf("pushing the chart to oci://%s: %w", ref, err)
	}
	return name.NewDigest(r.o.chart.Name()+"@"+res.Manifest.Digest, r.o.nameOptions...)
}
