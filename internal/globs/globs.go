// Package globs answers whether two path globs can match one file.
package globs

import (
	"path"
	"strings"
)

// Overlap reports whether two path globs of slash-separated segments
// (each a path.Match pattern or "**", which matches any number of
// segments) can match one file. Where two segments both hold wildcards it
// compares their literal prefixes and suffixes, so it may say yes for a
// pair no file matches, never no for a pair one does.
func Overlap(a, b string) bool {
	return segmentsOverlap(strings.Split(a, "/"), strings.Split(b, "/"))
}

func segmentsOverlap(a, b []string) bool {
	switch {
	case len(a) > 0 && a[0] == "**":
		return segmentsOverlap(a[1:], b) || len(b) > 0 && segmentsOverlap(a, b[1:])
	case len(b) > 0 && b[0] == "**":
		return segmentsOverlap(b, a)
	case len(a) == 0 || len(b) == 0:
		return len(a) == len(b)
	}
	return segmentOverlaps(a[0], b[0]) && segmentsOverlap(a[1:], b[1:])
}

// segmentOverlaps reports whether two path.Match patterns of one segment
// can match one name.
func segmentOverlaps(a, b string) bool {
	const meta = `*?[\`
	aw, bw := strings.ContainsAny(a, meta), strings.ContainsAny(b, meta)
	switch {
	case !aw && !bw:
		return a == b
	case !aw:
		ok, _ := path.Match(b, a)
		return ok
	case !bw:
		ok, _ := path.Match(a, b)
		return ok
	}
	ap, bp := a[:strings.IndexAny(a, meta)], b[:strings.IndexAny(b, meta)]
	as, bs := a[strings.LastIndexAny(a, meta)+1:], b[strings.LastIndexAny(b, meta)+1:]
	return (strings.HasPrefix(ap, bp) || strings.HasPrefix(bp, ap)) && (strings.HasSuffix(as, bs) || strings.HasSuffix(bs, as))
}
