// Package waves rolls an environment out in steps over its clusters.
// .pinbot.yaml gives an environment an ordered waves: list, each wave
// with its own files (a cluster's overlay or values), the apps that prove
// it there and its own soak:
//
//	environments:
//	  - name: staging
//	    paths: ["envs/staging/**"]
//	    apps: [web-staging]
//	  - name: prod
//	    from: staging
//	    waves:
//	      - {name: canary, paths: ["envs/prod/eu-1/**"], apps: [web-eu-1], soak: 30m}
//	      - {name: quarter, paths: ["envs/prod/eu-2/**"], apps: [web-eu-2], soak: 1h}
//	      - {name: rest, paths: ["envs/prod/us-*/**"], apps: [web-us-1, web-us-2]}
//
// Expand makes each wave an environment of the chain, named ENV.WAVE,
// that comes from the wave before it (the first from the environment's
// from): so each wave is a promotion pull request of its own touching
// only its files, its gate is the previous wave's proof held for that
// wave's soak, a failed proof holds the digest in its wave and every
// later one and opens the rollback for its wave's files alone, and the
// ledger's tracks per wave are the cursor, which survives a failover. An
// environment that came from the waved one comes from its last wave. A
// pause of the environment pauses every wave of it.
package waves

import (
	"fmt"
	"slices"
	"strings"

	"pinbot.dev/pinbot/release"
)

// Name is the environment of wave w of env.
func Name(env, w string) string { return env + "." + w }

// Expand returns c with each environment that has waves replaced by its
// waves, in order; c itself is not changed. An environment without waves
// is kept as it is, and a chain without waves is returned as it is.
func Expand(c release.Chain) release.Chain {
	if !slices.ContainsFunc(c, func(e release.Environment) bool { return len(e.Waves) > 0 }) {
		return c
	}
	last := map[string]string{} // a waved environment to its last wave
	out := make(release.Chain, 0, len(c))
	for _, e := range c {
		if from, ok := last[e.From]; ok {
			e.From = from
		}
		if len(e.Waves) == 0 {
			out = append(out, e)
			continue
		}
		for i, w := range e.Waves {
			we := e
			we.Name, we.Of, we.Wave = Name(e.Name, w.Name), e.Name, w.Name
			we.Paths, we.Apps, we.Soak, we.Waves, we.Placement = w.Paths, w.Apps, w.Soak, nil, w.Placement
			if len(w.Apps) == 0 {
				we.Apps = e.Apps // the environment's, on the wave's clusters
			}
			if i > 0 {
				// Only the first wave takes a digest from upstream.
				we.From = Name(e.Name, e.Waves[i-1].Name)
				we.RequireAttestation, we.AttestationKeys, we.UpstreamSoak = false, nil, 0
			}
			if i == len(e.Waves)-1 && w.Soak == 0 {
				we.Soak = e.Soak
			}
			out = append(out, we)
		}
		last[e.Name] = Name(e.Name, e.Waves[len(e.Waves)-1].Name)
	}
	return out
}

// Validate says what is wrong with c's waves, each Problem at its path
// under the environment: a wave list of one wave, an empty wave, a wave
// named twice or with a name that is not a name, an environment that
// names paths besides its waves (or apps, unless every wave names its
// clusters), an expanded name another environment has, a placement
// that names no cluster or one cluster for every wave, and a
// maxUnproven that is no count or percentage or that tolerates every
// cluster of its wave. The paths of the waves are checked against every
// other environment's and wave's by release.Chain.Validate on the
// expanded chain.
func Validate(c release.Chain, validName func(string) bool) []Problem {
	var out []Problem
	add := func(path []any, format string, args ...any) {
		out = append(out, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	for i, e := range c {
		if len(e.Waves) == 0 {
			continue
		}
		placed := !slices.ContainsFunc(e.Waves, func(w release.Wave) bool { return !w.Named() })
		switch {
		case len(e.Paths) > 0 || len(e.Apps) > 0 && !placed:
			add([]any{i, "waves"}, "environment %q has waves: its paths and apps are its waves', not its own (apps beside waves only when every wave names its clusters)", e.Name)
		case len(e.Waves) == 1:
			add([]any{i, "waves"}, "environment %q has one wave: waves roll an environment out in two steps or more; give the wave's paths and apps to the environment instead", e.Name)
		}
		var seen []string
		for j, w := range e.Waves {
			at := func(key string) []any { return []any{i, "waves", j, key} }
			switch {
			case !validName(w.Name):
				add(at("name"), "environment %q: wave %d's name %q: want lowercase letters, digits, '.', '_' or '-'", e.Name, j+1, w.Name)
			case slices.Contains(seen, w.Name):
				add(at("name"), "environment %q: wave %q named twice", e.Name, w.Name)
			case slices.ContainsFunc(c, func(o release.Environment) bool { return o.Name == Name(e.Name, w.Name) }):
				add(at("name"), "environment %q: wave %q is environment %q, which is declared too", e.Name, w.Name, Name(e.Name, w.Name))
			}
			seen = append(seen, w.Name)
			if len(w.Paths) == 0 || len(w.Apps) == 0 && len(e.Apps) == 0 {
				add([]any{i, "waves", j}, "environment %q: wave %q is empty: give it the paths of its clusters' files and the apps that prove it there", e.Name, w.Name)
			}
			if w.Soak < 0 {
				add(at("soak"), "environment %q: wave %q: soak must not be negative", e.Name, w.Name)
			}
			out = append(out, placement(e, i, j)...)
		}
		if names := clusterNames(e.Waves); placed && len(names) == 1 && !slices.ContainsFunc(e.Waves, func(w release.Wave) bool { return len(w.Selector) > 0 }) {
			add([]any{i, "waves"}, "environment %q: every wave names cluster %q alone: waves roll an environment out over two clusters or more", e.Name, names[0])
		}
	}
	return out
}

// placement checks wave j of environment i's clusters and maxUnproven.
func placement(e release.Environment, i, j int) []Problem {
	w := e.Waves[j]
	var out []Problem
	add := func(key, format string, args ...any) {
		out = append(out, Problem{Path: []any{i, "waves", j, key}, Msg: fmt.Sprintf("environment %q: wave %q: ", e.Name, w.Name) + fmt.Sprintf(format, args...)})
	}
	for k, c := range w.Clusters {
		switch {
		case strings.TrimSpace(c) == "":
			add("clusters", "cluster %d is empty", k+1)
		case slices.Contains(w.Clusters[:k], c):
			add("clusters", "cluster %q named twice", c)
		}
	}
	for k, v := range w.Selector {
		if k == "" || v == "" {
			add("selector", "selector %q: %q: want a label and its value", k, v)
		}
	}
	tolerated, err := w.MaxUnproven.Of(len(w.Clusters))
	switch {
	case err != nil:
		add("maxUnproven", "maxUnproven %s", err)
	case w.MaxUnproven != "" && !w.Named():
		add("maxUnproven", "maxUnproven needs the wave's clusters (clusters: or selector:)")
	case len(w.Selector) == 0 && len(w.Clusters) > 0 && tolerated >= len(w.Clusters):
		add("maxUnproven", "maxUnproven %s tolerates every one of its %d clusters: one at least must prove it", w.MaxUnproven, len(w.Clusters))
	}
	return out
}

// clusterNames are the clusters the waves name, each once.
func clusterNames(ws []release.Wave) []string {
	var out []string
	for _, w := range ws {
		for _, c := range w.Clusters {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// Problem is what is wrong with a chain, at Path in .pinbot.yaml's
// environments: list (an index, then a key; for a wave, "waves", its
// index and a key).
type Problem struct {
	Path []any
	Msg  string
}

// Check checks the environments of c, their waves first (Validate), then
// the chain with each wave an environment of its own (Expand, then
// release.Chain.Validate), each problem at the environment or the wave
// at fault.
func Check(c release.Chain, validName func(string) bool, checkGlob func(string) error) []Problem {
	out := Validate(c, validName)
	type origin struct{ env, wave int }
	var from []origin
	for i, e := range c {
		if len(e.Waves) == 0 {
			from = append(from, origin{i, -1})
		}
		for j := range e.Waves {
			from = append(from, origin{i, j})
		}
	}
	for _, p := range Expand(c).Validate(validName, checkGlob) {
		o := from[p.Index]
		path := []any{o.env}
		if o.wave >= 0 && slices.Contains([]string{"", "name", "paths", "apps", "soak"}, p.Key) {
			path = append(path, "waves", o.wave)
		}
		if p.Key != "" {
			path = append(path, p.Key)
		}
		out = append(out, Problem{Path: path, Msg: p.Msg})
	}
	return out
}
