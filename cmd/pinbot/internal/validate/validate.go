// Package validate checks pinbot's config files offline: each by its
// kind, and the files given together against each other.
package validate

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/internal/confined"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/pins"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/promote/feeds"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/serve"
)

// Files validates each of files by its name's kind (.pinbot.yaml, else a
// serve config), then the files against each other (crossCheck).
func Files(files []string) []output.Validated {
	var (
		out    []output.Validated
		repos  []*promote.Config
		serves []*serve.Config
	)
	for _, f := range files {
		v, repo, srv := one(f)
		out = append(out, v)
		repos, serves = append(repos, repo), append(serves, srv)
	}
	crossCheck(out, repos, serves)
	return out
}

// one validates one file, by its name's kind, and returns what it
// loaded.
func one(file string) (output.Validated, *promote.Config, *serve.Config) {
	v := output.Validated{File: file, Kind: "reconciler"}
	var (
		err  error
		repo *promote.Config
		srv  *serve.Config
	)
	if filepath.Base(file) == promote.ConfigFile {
		v.Kind = "repository"
		var dir *confined.FS
		if dir, err = confined.Open(filepath.Dir(file)); err == nil {
			var c promote.Config
			c, err = promote.LoadConfig(dir)
			if err == nil {
				err = separable(filepath.Dir(file), dir, c)
			}
			repo = &c
			dir.Close()
		}
	} else {
		srv, err = serve.Load(file)
	}
	if err != nil {
		v.Error = redact.String(err.Error())
		return v, nil, nil
	}
	v.Valid = true
	return v, repo, srv
}

// separable says, when c's chain has waves, where a wave's kustomization
// in the repository at root reads a pinned file outside the wave
// (package feeds): the first such reference, at its file and line.
func separable(root string, fsys fs.FS, c promote.Config) error {
	if !slices.ContainsFunc(c.Environments, func(e release.Environment) bool { return e.Wave != "" }) {
		return nil
	}
	found, err := pins.ScanFS(fsys)
	if err != nil {
		return fmt.Errorf("reading the repository's pins: %w", err)
	}
	if probs := feeds.Check(fsys, c, found); len(probs) > 0 {
		p := probs[0]
		p.File = filepath.Join(root, filepath.FromSlash(p.File))
		return p
	}
	return nil
}

// crossCheck checks the files validated together against each other:
// the apps a .pinbot.yaml's environments name must be apps of the serve
// configs given. Where a serve config discovers apps (discover:), an app
// it does not list may yet be found, so that is a note, not an error.
func crossCheck(out []output.Validated, repos []*promote.Config, serves []*serve.Config) {
	var names []string
	known, discovers := map[string]bool{}, false
	clusters := clustersOf(serves)
	for i, s := range serves {
		if s == nil {
			continue
		}
		names = append(names, out[i].File)
		discovers = discovers || len(s.Discover) > 0
		for _, a := range s.Apps {
			known[a.Name] = true
		}
	}
	if len(names) == 0 {
		return
	}
	for i, r := range repos {
		if r == nil {
			continue
		}
		crossClusters(&out[i], r, clusters, names)
		unknown := r.Environments.UnknownApps(func(a string) bool { return known[a] })
		if len(unknown) == 0 {
			continue
		}
		msg := fmt.Sprintf("environments name apps %s does not run: %s", strings.Join(names, ", "), strings.Join(unknown, ", "))
		if discovers {
			out[i].Notes = append(out[i].Notes, msg+"; they must be discovered (discover:), or those environments prove nothing and nothing moves on from them")
			continue
		}
		out[i].Valid = false
		out[i].Error = msg + ": those environments prove nothing, and nothing moves on from them (name apps of serve's config)"
	}
}
