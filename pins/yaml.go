package pins

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// parseYAML returns the root node of each non-empty document in src, from
// the fast parser when the file is in its subset and from yaml.v3
// otherwise. A parse error comes with the 1-based line it names.
//
// keys says which mapping keys the caller needs scalar values of; files in
// the fast subset are pruned to them (see parseFast).
// Nodes from the fast parser come from a, when it is not nil, and are
// valid until it is reset.
//
// It returns the file's line table too when parsing built it on the way,
// and nil otherwise.
func parseYAML(src []byte, keys keySet, a *arena) ([]*yaml.Node, *lineTable, int, error) {
	if roots, starts, err := parseFast(src, keys, a); err == nil {
		return roots, &lineTable{src: src, starts: starts}, 0, nil
	}
	roots, err := parseSlow(src)
	if err != nil {
		line, msg := yamlErrorLine(src, err)
		return nil, nil, line, errors.New(msg)
	}
	return roots, nil, 0, nil
}

// parseSlow parses src with yaml.v3.
func parseSlow(src []byte) (roots []*yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: parser failure: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if err == io.EOF {
			return roots, nil
		}
		if err != nil {
			return nil, err
		}
		for _, r := range doc.Content {
			if r.Kind == yaml.ScalarNode && r.Tag == "!!null" && r.Value == "" {
				continue // an empty document
			}
			roots = append(roots, r)
		}
	}
}

// yamlErrorLine extracts the line yaml.v3 names in an error ("yaml: line
// 3: ..."). yaml.v3 leaves the line out on line 1 and for encoding errors,
// so for those the first byte it refuses is looked for.
func yamlErrorLine(src []byte, err error) (int, string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				return problemLine(src, n, rest[i+2:]), rest[i+2:]
			}
		}
	}
	lt := newLineTable(src)
	for off := lt.starts[0]; off < len(src); {
		r, n := utf8.DecodeRune(src[off:])
		if r == utf8.RuneError && n <= 1 || r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r >= 0x7f && r <= 0x9f && r != 0x85 {
			line, _ := lt.position(off)
			return line, msg
		}
		off += n
	}
	return 1, msg
}

// maxProbeLines bounds how far past yaml.v3's line problemLine looks.
const maxProbeLines = 256

// problemLine finds the line yaml.v3 means by an error it reports at line
// from. yaml.v3 names the start of the construct it was parsing, and one
// line too low when that is a flow collection (it prints a 0-based line),
// rather than the offending line: "b: [x, y" on line 2 followed by "c: 3"
// is reported at line 1, a bad token on line 6 of a mapping opened on line
// 3 at line 3. The offending line is the first whose prefix of the file
// yaml.v3 refuses with the same message, looked for from line from on.
func problemLine(src []byte, from int, msg string) int {
	lt := newLineTable(src)
	from = max(from, 1)
	first := 0
	for k := from; k <= len(lt.starts) && k < from+maxProbeLines; k++ {
		_, err := parseSlow(src[:lt.lineEnd(k)])
		if err == nil {
			continue
		}
		if m := err.Error(); strings.HasSuffix(m, ": "+msg) || m == "yaml: "+msg {
			return k
		}
		if first == 0 {
			first = k
		}
	}
	if first > 0 {
		return first
	}
	return from
}

// brokenPart is a document of a YAML file that does not parse.
type brokenPart struct {
	start, end int // its bytes: from the line after a "---" to the next one
	line       int // the error's line
	err        error
}

// syntaxError returns the part's error as a *SyntaxError of file.
func (b brokenPart) syntaxError(file string) *SyntaxError {
	return &SyntaxError{File: file, Line: b.line, Err: b.err}
}

// maxParts bounds the documents parseParts parses one by one.
const maxParts = 512

// parseParts parses each document of a file that does not parse as a
// whole, such as a multi-document file whose last document is a Go
// template. It returns the roots of the documents that parse, with their
// positions in the whole file, and the documents that do not. line and err
// are the whole file's error, returned for it when it is one document.
func parseParts(src []byte, line int, err error) ([]*yaml.Node, []brokenPart) {
	whole := []brokenPart{{start: 0, end: len(src), line: line, err: err}}
	lt := newLineTable(src)
	type span struct{ start, end int }
	var docs []span
	start := lt.starts[0]
	for l := 1; l <= len(lt.starts); l++ {
		text := src[lt.starts[l-1]:lt.lineEnd(l)]
		if isDocMarker(text) {
			docs = append(docs, span{start, lt.starts[l-1]})
			start = lt.starts[l-1] + len(text)
		}
	}
	docs = append(docs, span{start, len(src)})
	if len(docs) < 2 || len(docs) > maxParts {
		return nil, whole
	}
	var broken []brokenPart
	keep := make([]bool, len(docs))
	for i, d := range docs {
		others := make([]span, 0, len(docs)-1)
		for j, o := range docs {
			if j != i {
				others = append(others, o)
			}
		}
		one := blankOut(src, func(yield func(int, int) bool) {
			for _, o := range others {
				if !yield(o.start, o.end) {
					return
				}
			}
		})
		if _, err := parseSlow(one); err != nil {
			l, msg := yamlErrorLine(one, err)
			broken = append(broken, brokenPart{start: d.start, end: d.end, line: l, err: errors.New(msg)})
			continue
		}
		keep[i] = true
	}
	if len(broken) == 0 {
		return nil, whole
	}
	good := blankOut(src, func(yield func(int, int) bool) {
		for _, b := range broken {
			if !yield(b.start, b.end) {
				return
			}
		}
	})
	roots, err := parseSlow(good)
	if err != nil {
		return nil, whole
	}
	return roots, broken
}

// isDocMarker reports a "---" or "..." line that starts or ends a document.
func isDocMarker(l []byte) bool {
	if len(l) < 3 || !(string(l[:3]) == "---" || string(l[:3]) == "...") {
		return false
	}
	return len(l) == 3 || l[3] == ' ' || l[3] == '\t'
}

// blankOut returns a copy of src with every byte of the given spans but
// line breaks turned into spaces, so that what is left parses at the same
// lines, columns and offsets as in src.
func blankOut(src []byte, spans func(yield func(start, end int) bool)) []byte {
	out := append([]byte(nil), src...)
	for start, end := range spans {
		for i := start; i < end; {
			if n := breakLen(out, i); n > 0 {
				i += n
				continue
			}
			out[i] = ' '
			i++
		}
	}
	return out
}

// pinLike finds, in the bytes src[start:end] that do not parse, what looks
// like a pin of repo: a reference to it with a digest as a mapping value or
// sequence item, or with a tag under an "image" key. It returns its line
// and text. A mention such as "app: nginx" or "# served by nginx" is not
// one.
func pinLike(src []byte, lt *lineTable, start, end int, repo string, repos repoCache) (int, string, bool) {
	first, _ := lt.position(start)
	for l := first; l <= len(lt.starts) && lt.starts[l-1] < end; l++ {
		text := string(src[lt.starts[l-1]:lt.lineEnd(l)])
		v := strings.TrimLeft(text, " \t")
		for strings.HasPrefix(v, "- ") {
			v = strings.TrimLeft(v[2:], " \t")
		}
		key := ""
		if k := keyLen([]byte(v)); k > 0 {
			key, v = v[:k], strings.TrimLeft(v[k+1:], " \t")
		}
		v = strings.TrimLeft(v, `"'`)
		n := 0
		for n < len(v) && isRefByte(v[n]) {
			n++
		}
		r, ok := parseRef(v[:n], repos)
		if ok && r.repo == repo && (r.digOff >= 0 || r.tagOff >= 0 && key == "image") {
			return l, v[:n], true
		}
	}
	return 0, "", false
}

// malformed returns the parts of a YAML file that do not parse, reading it
// no further than that.
func malformed(src []byte, a *arena) []brokenPart {
	_, _, line, err := parseYAML(src, noKeys, a)
	if err == nil {
		return nil
	}
	_, broken := parseParts(src, line, err)
	return broken
}
