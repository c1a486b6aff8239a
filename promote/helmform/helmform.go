// Package helmform finds out in which form a Helm values file takes a
// digest pin: it renders the chart at or above the file with a probe
// digest, first as a "digest:" key, then in the tag ("tag:
// v5@sha256:..."), and keeps the first form the rendered objects show.
// A file no chart in the tree renders takes the form .pinbot.yaml's helm:
// declares for the chart its HelmRelease or Application names, or stays
// unverified. pinbot pins set uses it; promote reads the declared forms
// alone.
package helmform

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"pinbot.dev/pinbot/internal/confined"
	"pinbot.dev/pinbot/pins"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/render"
)

// probeDigest is the digest Forms renders charts with: one no real
// image has, so finding it in the output proves the values reached it.
var probeDigest = func() string {
	sum := sha256.Sum256([]byte("pinbot helm probe"))
	return "sha256:" + hex.EncodeToString(sum[:])
}()

// Check is what Forms found for one values file.
type Check struct {
	// File is the values file, a slash path relative to the directory.
	File string
	// Chart is the chart directory the file was rendered with, "" when
	// none is at or above it.
	Chart string
	// digestChoice is how the file's Helm pins are written (see pins.Update).
	digestChoice pins.HelmChoice
	// Unverified is set when no chart in the tree renders the file (the
	// values of a chart elsewhere, such as a Flux HelmRelease's): the pin
	// gets a digest key, which nothing here can prove takes effect.
	Unverified bool
}

// Note says, for people, what a check means for the pins of its file; ""
// when the pins take effect as written.
func (c Check) Note() string {
	switch {
	case c.Unverified:
		return fmt.Sprintf("unverified: %s is not rendered by a chart in the repository, so pinbot cannot check that its digest: takes effect", c.File)
	case c.digestChoice.Form == pins.HelmLeave:
		return c.File + ": " + c.digestChoice.Reason
	}
	return ""
}

// Forms finds out, for each values file of fsys in which u (under
// PinTags) would pin a Helm mapping that carries a tag but no digest, in
// which form the pin takes effect. When a Chart.yaml is at or above the
// file, the chart is rendered with the file's values pinned to a probe
// digest: first as a "digest:" key, then as "tag: v5@sha256:...". The
// first form whose probe digest appears in the rendered objects is chosen;
// when neither does, the file's pins are left alone ("not pinned: chart X
// does not render a digest"). A file no chart renders is unverified. The
// result goes into u.Helm; see Check.Note for what to tell people.
func Forms(ctx context.Context, fsys fs.FS, u pins.Update, opts ...pins.Option) (map[string]pins.HelmChoice, []Check, error) {
	if !u.PinTags {
		return nil, nil, nil
	}
	planned, _, err := pins.Edit(ctx, fsys, u, opts...)
	if err != nil {
		return nil, nil, err
	}
	files := map[string]bool{}
	for _, c := range planned {
		if c.Kind == pins.KindHelm && c.OldDigest == "" {
			files[c.File] = true
		}
	}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	choices := map[string]pins.HelmChoice{}
	var checks []Check
	var cfg *promote.Config
	for _, f := range names {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		c, err := probeHelm(ctx, fsys, f, u)
		if err != nil {
			return nil, nil, err
		}
		if c.Unverified {
			if cfg == nil {
				loaded, err := promote.LoadConfig(fsys)
				if err != nil {
					return nil, nil, err
				}
				cfg = &loaded
			}
			declared(cfg, fsys, &c)
		}
		choices[f] = c.digestChoice
		checks = append(checks, c)
	}
	return choices, checks, nil
}

// FormsIn is Forms on the directory dir: it sets u.Helm and
// returns the notes of the values files no chart renders, which pinbot
// pins unverified.
func FormsIn(ctx context.Context, dir string, u *pins.Update, opts ...pins.Option) (unverified []string, err error) {
	tree, err := confined.Open(dir)
	if err != nil {
		return nil, err
	}
	defer tree.Close()
	choices, checks, err := Forms(ctx, tree, *u, opts...)
	if err != nil {
		return nil, err
	}
	u.Helm = choices
	for _, c := range checks {
		if c.Unverified {
			unverified = append(unverified, c.Note())
		}
	}
	return unverified, nil
}

// declared applies what .pinbot.yaml declares for the chart a values file
// feeds, which pinbot cannot render: the chart a Flux HelmRelease or an
// Argo CD Application in the file names.
func declared(cfg *promote.Config, fsys fs.FS, c *Check) {
	src, err := fs.ReadFile(fsys, c.File)
	if err != nil {
		return
	}
	chart := releasedChart(src)
	form, ok := cfg.HelmFormOf(chart)
	if chart == "" || !ok {
		return
	}
	c.Chart, c.Unverified = chart, false
	c.digestChoice = pins.HelmChoice{Form: form}
	if form == pins.HelmLeave {
		c.digestChoice.Reason = fmt.Sprintf("not pinned: chart %s does not render a digest, as %s declares", chart, promote.ConfigFile)
	}
}

// releasedChart returns the chart the first Flux HelmRelease
// (spec.chart.spec.chart) or Argo CD Application (spec.source.chart, or
// the first of spec.sources[].chart) of a file names, or "".
func releasedChart(src []byte) string {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		var doc struct {
			Kind string `yaml:"kind"`
			Spec struct {
				Chart struct {
					Spec struct {
						Chart string `yaml:"chart"`
					} `yaml:"spec"`
				} `yaml:"chart"`
				Source struct {
					Chart string `yaml:"chart"`
				} `yaml:"source"`
				Sources []struct {
					Chart string `yaml:"chart"`
				} `yaml:"sources"`
			} `yaml:"spec"`
		}
		if err := dec.Decode(&doc); err != nil {
			return ""
		}
		switch doc.Kind {
		case "HelmRelease":
			if doc.Spec.Chart.Spec.Chart != "" {
				return doc.Spec.Chart.Spec.Chart
			}
		case "Application":
			if doc.Spec.Source.Chart != "" {
				return doc.Spec.Source.Chart
			}
			for _, s := range doc.Spec.Sources {
				if s.Chart != "" {
					return s.Chart
				}
			}
		}
	}
}

// probeHelm renders the chart of one values file in each form.
func probeHelm(ctx context.Context, fsys fs.FS, file string, u pins.Update) (Check, error) {
	check := Check{File: file}
	chart, ok := chartOf(fsys, file)
	if !ok {
		check.Unverified = true
		return check, nil
	}
	check.Chart = chart
	src, err := fs.ReadFile(fsys, file)
	if err != nil {
		return check, fmt.Errorf("reading %s: %w", file, err)
	}
	var why []string
	for _, form := range []pins.HelmForm{pins.HelmDigestKey, pins.HelmTagDigest} {
		probe := u
		probe.Digest, probe.Digests, probe.Include = probeDigest, nil, nil
		probe.Helm = map[string]pins.HelmChoice{file: {Form: form}}
		out, _, err := pins.Rewrite(file, src, probe)
		if err != nil {
			return check, fmt.Errorf("probing the chart of %s: %w", file, err)
		}
		var values map[string]any
		if err := yaml.Unmarshal(out, &values); err != nil {
			return check, fmt.Errorf("probing the chart of %s: reading the values: %w", file, err)
		}
		objs, err := render.FS(fsys, chart, render.WithContext(ctx), render.WithHelm(render.Helm{Values: values}))
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		for _, o := range objs {
			if containsString(o.Object, "@"+probeDigest) {
				check.digestChoice = pins.HelmChoice{Form: form}
				return check, nil
			}
		}
	}
	reason := fmt.Sprintf("not pinned: chart %s does not render a digest", chart)
	if len(why) > 0 {
		reason = fmt.Sprintf("not pinned: chart %s does not render (%s)", chart, why[0])
	}
	check.digestChoice = pins.HelmChoice{Form: pins.HelmLeave, Reason: reason}
	return check, nil
}

// chartOf returns the directory of the nearest Chart.yaml at or above a
// values file.
func chartOf(fsys fs.FS, file string) (string, bool) {
	for d := path.Dir(file); ; d = path.Dir(d) {
		if render.IsChart(fsys, d) {
			return d, true
		}
		if d == "." || d == "/" {
			return "", false
		}
	}
}

// containsString reports whether any string in a decoded object holds s.
func containsString(v any, s string) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, s)
	case map[string]any:
		for _, e := range v {
			if containsString(e, s) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if containsString(e, s) {
				return true
			}
		}
	}
	return false
}
