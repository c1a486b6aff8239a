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
				return n, rest[i+2:]
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
