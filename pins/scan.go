package pins

import (
	"context"
	"slices"
	"strings"
	"sync"
)

// Scan returns every digest pin under dir, sorted by file, line and
// column, including ignored ones. Files without "sha256:" are not parsed.
// A malformed YAML file is warned about (see WithWarnings) with the line of
// its error, whether or not it holds a digest, and the pins of its
// documents that parse are listed; a pin whose
// value cannot be rewritten in place (an escaped or multi-line scalar) is
// listed at its scalar's position and warned about. A file that cannot be
// read, or is larger than MaxFileSize, is skipped with a warning too. A Set
// of the tree that was killed after its commit point is finished first.
func Scan(dir string, opts ...Option) ([]Pin, error) {
	o := makeOptions(opts)
	t, err := openTree(dir)
	if err != nil {
		return nil, err
	}
	var warn warnings
	unlock, err := prepareTree(context.Background(), t, false, o, &warn)
	if err != nil {
		warn.deliver(o.warn)
		return nil, err
	}
	defer unlock()
	pins, err := scan(t, o, &warn)
	warn.deliver(o.warn)
	return pins, err
}

// scan lists the pins of files; see Scan. Warnings go to warn.
func scan(files files, o options, warn *warnings) ([]Pin, error) {
	var (
		mu    sync.Mutex
		found [][]Pin
		total int
	)
	err := files.forEach(walkOptions{warn: warn, lenient: true, vendored: o.vendored}, func(f treeFile, src []byte, _ func() (fileStat, error)) error {
		a := getArena()
		defer putArena(a)
		if !o.tagRefs && !containsDigest(src) {
			// No pin, but a malformed file is worth a warning.
			if o.warn != nil && f.ft != ftDockerfile {
				for _, b := range malformed(src, a) {
					warn.add(f.rel, b.syntaxError(f.rel))
				}
			}
			return nil
		}
		sites, _, broken := fileSites(f.rel, f.ft, src, a)
		for _, b := range broken {
			warn.add(f.rel, b.syntaxError(f.rel))
		}
		pins := make([]Pin, 0, len(sites))
		for _, s := range sites {
			if s.digest == "" && !o.tagRefs || s.unplaced != "" && !o.tagRefs {
				continue
			}
			if s.err != nil {
				warn.add(f.rel, &SyntaxError{File: f.rel, Line: s.line, Err: s.err})
			}
			pins = append(pins, Pin{File: f.rel, Line: s.line, Column: s.col, Kind: s.kind,
				Image: s.image, Tag: s.tag, Digest: s.digest, Ignored: s.ignored, Also: s.alts})
		}
		if len(pins) > 0 {
			mu.Lock()
			found = append(found, pins)
			total += len(pins)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Each file's pins sort by position; then the files sort by name.
	slices.SortFunc(found, func(a, b []Pin) int { return strings.Compare(a[0].File, b[0].File) })
	pins := make([]Pin, 0, total)
	for _, f := range found {
		slices.SortFunc(f, func(a, b Pin) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Column - b.Column
		})
		pins = append(pins, f...)
	}
	return pins, nil
}
