package pins

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/imageref"
)

// fileType is how a file is read, chosen by its name.
type fileType int

const (
	ftNone fileType = iota
	ftYAML
	ftKustomize
	ftPins
	ftDockerfile
)

// classify chooses a file's type from its base name.
func classify(file string) fileType {
	base := path.Base(file)
	lower := strings.ToLower(base)
	switch {
	case lower == "kustomization.yaml" || lower == "kustomization.yml" || base == "Kustomization":
		return ftKustomize
	case lower == "pins.yaml" || lower == "pins.yml" || strings.HasSuffix(lower, ".pins.yaml") || strings.HasSuffix(lower, ".pins.yml"):
		return ftPins
	case strings.HasSuffix(lower, ".yaml") || strings.HasSuffix(lower, ".yml"):
		return ftYAML
	case strings.HasSuffix(lower, ".dockerignore"):
		return ftNone
	case lower == "dockerfile" || lower == "containerfile" ||
		strings.HasSuffix(lower, ".dockerfile") || strings.HasSuffix(lower, ".containerfile") ||
		strings.HasPrefix(lower, "dockerfile.") || strings.HasPrefix(lower, "containerfile."):
		return ftDockerfile
	}
	return ftNone
}

// fileSites reads the sites of one file. The documents of a YAML file
// that do not parse come back as broken parts (the whole file, when it is
// one document or none parses), and the sites of the others are read. The
// sites and line table may use memory from a (if not nil), so they are
// valid until a is reset.
func fileSites(file string, ft fileType, src []byte, a *arena) ([]site, *lineTable, []brokenPart) {
	if a == nil {
		a = &arena{}
	}
	if a.repos == nil {
		a.repos = repoCache{}
	}
	switch ft {
	case ftNone:
		return nil, newLineTable(src), nil
	case ftDockerfile:
		lt := newLineTable(src)
		return dockerfileSites(src, lt, a.sites[:0], a.repos), lt, nil
	}
	keys := manifestKeys
	switch ft {
	case ftKustomize:
		keys = kustomizeKeys
	case ftPins:
		keys = pinsFileKeys
	case ftYAML:
		if bytes.Contains(src, []byte("kustomize.toolkit.fluxcd.io/")) {
			keys = fluxKeys
		}
	}
	roots, lt, line, err := parseYAML(src, keys, a)
	var broken []brokenPart
	if err != nil {
		roots, broken = parseParts(src, line, err)
	}
	if lt == nil {
		lt = newLineTable(src)
	}
	sites := yamlSites(ft, src, lt, roots, a.sites[:0], a.repos)
	a.sites = sites[:0]
	return sites, lt, broken
}

// update is a validated Update.
type update struct {
	Update
	repo     string
	mentions mentions
}

func prepare(u Update) (*update, error) {
	if u.Digest != "" || u.Digests == nil {
		if err := checkDigest(u.Digest); err != nil {
			return nil, err
		}
	}
	for k, d := range u.Digests {
		if err := checkDigest(d); err != nil {
			return nil, fmt.Errorf("digest for %s:%d: %w", k.File, k.Line, err)
		}
	}
	if u.Tag != "" && !validTag(u.Tag) {
		return nil, fmt.Errorf("tag %s: %w", clip.QuoteRef(u.Tag), ErrInvalidTag)
	}
	repo, err := updateRepo(u.Image)
	if err != nil {
		return nil, err
	}
	return &update{Update: u, repo: repo, mentions: newMentions(repo)}, nil
}

// digestFor returns the digest a site of the update's repository gets, or
// "" when it is to be left alone.
func (u *update) digestFor(file string, s *site) string {
	if u.Digests == nil || s.digest == "" {
		return u.Digest
	}
	if d, ok := u.Digests[PinKey{File: file, Line: s.line, Digest: s.digest}]; ok {
		return d
	}
	return s.digest
}

// Rewrite sets the pins of u.Image in one file's content and returns the
// new content and the changed lines; file (a slash path) chooses the format
// by its name and names the file in errors and changes. It does no I/O and
// ignores u.Include. With nothing to change it returns src itself and no
// changes. A YAML document that does not parse is a *SyntaxError naming
// the line of what looks like a pin of u.Image in it; one that holds none
// is left as it is, and the file's other documents are rewritten (a
// file no part of which parses is a *SyntaxError at its error's line). Set warns about those instead.
//
// It decides each pin's scope as Decide does; the pins it leaves out of
// scope are not reported, and a file whose pins in scope carry several
// variants (when u names no tag) is refused with ErrMixedVariants.
func Rewrite(file string, src []byte, u Update) ([]byte, []Change, error) {
	up, err := prepare(u)
	if err != nil {
		return nil, nil, err
	}
	out, changes, fs, err := rewrite(file, src, up)
	if err != nil {
		return nil, nil, err
	}
	if fs.unreadable {
		return nil, nil, fs.broken[0]
	}
	if up.checkVariants() {
		if err := mixedVariants(up.repo, fs.tagged); err != nil {
			return nil, nil, err
		}
	}
	return out, changes, nil
}

// fileScope is what rewrite decided about the scope of one file's pins.
type fileScope struct {
	broken     []*SyntaxError // parts that do not parse and hold no pin of the repository
	unreadable bool           // no part of the file parses
	skipped    []Skip
	tagged     []Pin // pins in scope that carry a tag, for the variant check
}

// checkVariants says whether the pins in scope must share one variant.
func (u *update) checkVariants() bool { return u.Tag == "" && !u.AnyVariant }

type edit struct {
	off, n  int
	text    string
	newLine bool // text starts a new line after the one at off
}

// siteChange is one site's edits, before line numbers are known.
type siteChange struct {
	s              site
	digest, tag    string
	first, nedits  int // the site's edits, in edits
	insertedAtLine int // original line after which a line was added, or 0
}

func rewrite(file string, src []byte, u *update) ([]byte, []Change, fileScope, error) {
	var fs fileScope
	ft := classify(file)
	if ft == ftNone {
		return src, nil, fs, nil
	}
	a := getArena()
	defer putArena(a)
	sites, lt, broken := fileSites(file, ft, src, a)
	for _, b := range broken {
		// A part that does not parse blocks the rewrite only when it holds
		// what looks like a pin of the repository; otherwise the file is
		// warned about, and its other documents are rewritten.
		if line, ref, ok := pinLike(src, lt, b.start, b.end, u.repo, a.repos); ok {
			return nil, nil, fs, &SyntaxError{File: file, Line: line,
				Err: fmt.Errorf("%s looks like a pin of %s, in a part that does not parse (line %d: %s)", ref, u.repo, b.line, b.err.Error())}
		}
		fs.broken = append(fs.broken, b.syntaxError(file))
		fs.unreadable = fs.unreadable || b.start == 0 && b.end == len(src)
	}
	var edits []edit
	var scs []siteChange
	for _, s := range sites {
		if !s.names(u.repo) || s.ignored || s.bare {
			continue
		}
		s.image = u.repo // the name it is promoted under, of its names
		pinned := s.digest != ""
		if s.unplaced != "" {
			fs.skipped = append(fs.skipped, Skip{File: file, Line: s.line, Tag: s.tag, Reason: "not pinned: " + s.unplaced})
			continue
		}
		if !pinned && !u.PinTags {
			continue
		}
		if ok, reason := scope(u.Tag, s.tag, pinned); !ok {
			fs.skipped = append(fs.skipped, Skip{File: file, Line: s.line, Tag: s.tag, Reason: reason})
			continue
		}
		if s.err != nil {
			return nil, nil, fs, &SyntaxError{File: file, Line: s.line, Err: s.err}
		}
		if !pinned && s.kind == KindHelm {
			switch hc := u.Helm[file]; hc.Form {
			case HelmLeave:
				fs.skipped = append(fs.skipped, Skip{File: file, Line: s.line, Tag: s.tag, Reason: hc.Reason})
				continue
			case HelmTagDigest:
				if s.tagOff < 0 {
					continue
				}
				s.pinOff, s.pinLen, s.pinPrefix, s.pinLine, s.digBare = s.tagOff+s.tagLen, 0, "@", false, false
				s.line, s.col = lt.position(s.pinOff)
			}
		}
		if !pinned && s.pinOff < 0 {
			continue
		}
		if pinned && s.tag != "" {
			fs.tagged = append(fs.tagged, Pin{File: file, Line: s.line, Column: s.col, Kind: s.kind, Image: s.image, Tag: s.tag, Digest: s.digest})
		}
		d := u.digestFor(file, &s)
		if d == "" {
			continue // a tag reference, and no digest to pin it to
		}
		tag := s.tag
		if u.Tag != "" && s.tagOff >= 0 {
			tag = u.Tag
		}
		if d == s.digest && tag == s.tag {
			continue
		}
		sc := siteChange{s: s, digest: d, tag: tag, first: len(edits)}
		switch {
		case pinned && d != s.digest && s.digBare:
			edits = append(edits, edit{off: s.digOff, n: imageref.DigestLen - len("sha256:"), text: strings.TrimPrefix(d, "sha256:")})
		case pinned && d != s.digest:
			edits = append(edits, edit{off: s.digOff, n: imageref.DigestLen, text: d})
		case !pinned && s.digBare:
			edits = append(edits, edit{off: s.pinOff, n: s.pinLen, text: s.pinPrefix + strings.TrimPrefix(d, "sha256:"), newLine: s.pinLine})
		case !pinned:
			edits = append(edits, edit{off: s.pinOff, n: s.pinLen, text: s.pinPrefix + d, newLine: s.pinLine})
			if s.pinLine {
				sc.insertedAtLine, _ = lt.position(s.pinOff)
			}
		}
		if tag != s.tag {
			edits = append(edits, edit{off: s.tagOff, n: s.tagLen, text: tagText(tag, s.tagScalar)})
		}
		sc.nedits = len(edits) - sc.first
		scs = append(scs, sc)
	}
	if len(edits) == 0 {
		return src, nil, fs, nil
	}
	out, err := apply(src, edits)
	if err != nil {
		return nil, nil, fs, fmt.Errorf("rewriting %s: %w", file, err)
	}
	return out, changes(file, lt, newLineTable(out), edits, scs), fs, nil
}

// tagText returns a new tag as written in place of the old one. A tag that
// was a plain YAML scalar is quoted when YAML 1.1 or 1.2 would not read it
// back as the same string ("1.10" is a number).
func tagText(tag string, plainScalar bool) string {
	if !plainScalar || plainSafe(tag) {
		return tag
	}
	return `"` + tag + `"`
}

func plainSafe(t string) bool {
	c := t[0]
	if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
		return false
	}
	switch strings.ToLower(t) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return false
	}
	return true
}

// apply splices edits into a copy of src.
func apply(src []byte, edits []edit) ([]byte, error) {
	sorted := append([]edit(nil), edits...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].off < sorted[j].off })
	grow := 0
	for i, e := range sorted {
		if i > 0 && sorted[i-1].off+sorted[i-1].n > e.off {
			return nil, errors.New("two pins overlap")
		}
		grow += len(e.text) - e.n
	}
	out := make([]byte, 0, len(src)+grow)
	last := 0
	for _, e := range sorted {
		out = append(out, src[last:e.off]...)
		out = append(out, e.text...)
		last = e.off + e.n
	}
	return append(out, src[last:]...), nil
}

// changes describes each site's changed lines, numbered in the new file.
func changes(file string, old, neu *lineTable, edits []edit, scs []siteChange) []Change {
	var inserted []int // original lines after which a line was added, sorted
	for _, sc := range scs {
		if sc.insertedAtLine > 0 {
			inserted = append(inserted, sc.insertedAtLine)
		}
	}
	sort.Ints(inserted)
	newLine := func(l int) int { return l + sort.SearchInts(inserted, l) }

	var out []Change
	for _, sc := range scs {
		base := Change{File: file, Kind: sc.s.kind, Image: sc.s.image,
			OldDigest: sc.s.digest, NewDigest: sc.digest, OldTag: sc.s.tag, NewTag: sc.tag}
		seen := map[int]bool{}
		for _, e := range edits[sc.first : sc.first+sc.nedits] {
			l, _ := old.position(e.off)
			if e.newLine {
				c := base
				c.Line = newLine(l) + 1
				c.After = neu.text(c.Line)
				out = append(out, c)
				continue
			}
			if seen[l] {
				continue
			}
			seen[l] = true
			c := base
			c.Line = newLine(l)
			c.Before, c.After = old.text(l), neu.text(c.Line)
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// containsDigest is the cheap test for a file that may hold a pin.
func containsDigest(src []byte) bool {
	return bytes.Contains(src, []byte("sha256:")) || bytes.Contains(src, []byte("sha:"))
}
