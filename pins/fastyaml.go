package pins

import (
	"errors"

	"gopkg.in/yaml.v3"
)

// errFallback tells parseYAML to hand a file to yaml.v3.
var errFallback = errors.New("outside the fast subset")

// parseFast parses the plain subset of YAML most manifests are written in,
// many times faster than yaml.v3, and returns the root node of each
// document, built as yaml.v3 would build it (kinds, styles, values, lines
// and columns of scalars). It returns errFallback for anything outside the
// subset, so it never judges a file malformed; yaml.v3 does that.
//
// The subset: printable ASCII with "\n" line breaks; block mappings and
// sequences rooted at column 0; keys of [A-Za-z0-9_./-] characters; plain
// scalars and single-line quoted scalars without escapes; literal and folded
// block scalars without an indentation indicator; single-line flow
// collections; anchors on a scalar or flow collection on the same line,
// aliases; comments; "---" document markers. Tags, anchors on block
// collections, multi-line plain or quoted scalars, complex keys, tabs, CR,
// non-ASCII and directives are outside it.
//
// To save time and memory it builds only what finding pins needs: a
// mapping keeps a pair only if the key is one of keys or the value is a
// block collection or a non-empty flow collection, and a sequence drops its
// scalar items and empty flow collections; a kept key not in keys has an
// empty value (see prune). allKeys keeps every key.
//
// FuzzParse and TestParseFastRandom check that whenever it accepts an
// input, yaml.v3 accepts it too and builds the same pruned tree.
//
// Nodes come from a, when it is not nil, and are valid until it is reset.
//
// It also returns the offset where each line starts, as newLineTable would
// compute them, which saves the caller a pass over the file.
func parseFast(src []byte, keys keySet, a *arena) ([]*yaml.Node, []int, error) {
	if a == nil {
		a = &arena{}
	}
	starts, ok := lineStarts(src, append(a.starts[:0], 0))
	a.starts = starts[:0]
	if !ok {
		return nil, nil, errFallback
	}
	p := &fastParser{keys: keys, arena: a, stack: a.stack[:0]}
	defer func() { a.stack = p.stack[:0] }()
	for i, off := range starts {
		end := len(src)
		if i+1 < len(starts) {
			end = starts[i+1] - 1
		} else if off == len(src) {
			break // after a final "\n"
		}
		if err := p.line(src[off:end], i+1); err != nil {
			return nil, nil, err
		}
	}
	p.endDocument()
	return p.roots, starts, nil
}

type fastFrame struct {
	node   *yaml.Node
	indent int  // column (0-based) of the keys or dashes
	open   bool // the last key or dash awaits a value on a later line
	// openKept is false when the open key is not one of keys: it is
	// dropped again if its value turns out to be a scalar.
	openKept bool
}

func (f *fastFrame) seq() bool { return f.node.Kind == yaml.SequenceNode }

type fastParser struct {
	keys    keySet
	arena   *arena
	anchors map[string]*yaml.Node // defined in this document; nil when dropped
	roots   []*yaml.Node
	stack   []fastFrame

	// The block scalar being skipped, if block is true.
	block       bool
	blockParent int // indentation of the collection holding it
	blockIndent int // indentation of its content; 0 until its first line
	blockLead   int // widest leading blank line
}

// maxFastDepth bounds nesting; deeper files fall back.
const maxFastDepth = 64

func (p *fastParser) line(l []byte, n int) error {
	ind := 0
	for ind < len(l) && l[ind] == ' ' {
		ind++
	}
	rest := l[ind:]
	if p.block {
		if len(rest) == 0 {
			if p.blockIndent == 0 && ind > p.blockLead {
				p.blockLead = ind
			}
			return nil
		}
		if p.blockIndent == 0 && ind > p.blockParent {
			if p.blockLead > ind {
				return errFallback
			}
			p.blockIndent = ind
		}
		if p.blockIndent > 0 && ind >= p.blockIndent {
			return nil
		}
		p.block = false
	}
	if len(rest) == 0 || rest[0] == '#' {
		return nil
	}
	if ind == 0 {
		switch {
		case hasPrefix(l, "---") && (len(l) == 3 || l[3] == ' ' && onlyComment(l[3:])):
			p.endDocument()
			return nil
		case hasPrefix(l, "---"), hasPrefix(l, "..."), l[0] == '%':
			return errFallback
		}
	}
	dash := isDash(rest)
	if len(p.stack) > 0 {
		top := &p.stack[len(p.stack)-1]
		if top.open {
			top.open = false
			if ind > top.indent || ind == top.indent && dash && !top.seq() {
				kind, ok := collectionKind(dash, rest)
				if !ok {
					return errFallback
				}
				child := p.collection(kind, n, ind)
				p.add(top.node, child)
				return p.push(child, ind, rest, n)
			}
			p.closeNull(top)
		}
	}
	for len(p.stack) > 0 && p.stack[len(p.stack)-1].indent > ind {
		p.stack = p.stack[:len(p.stack)-1]
	}
	if len(p.stack) == 0 {
		if len(p.roots) > 0 && p.roots[len(p.roots)-1] == nil {
			// A document holds one root; a sibling at column 0 is an error.
			return errFallback
		}
		if ind != 0 {
			return errFallback
		}
		kind, ok := collectionKind(dash, rest)
		if !ok {
			return errFallback
		}
		root := p.collection(kind, n, 0)
		p.roots = append(p.roots, root, nil) // nil marks the open document
		return p.push(root, 0, rest, n)
	}
	top := &p.stack[len(p.stack)-1]
	if top.indent != ind {
		return errFallback
	}
	if top.seq() && !dash {
		// The end of a sequence indented like its parent mapping's keys.
		if len(p.stack) < 2 || p.stack[len(p.stack)-2].indent != ind || p.stack[len(p.stack)-2].node.Kind != yaml.MappingNode {
			return errFallback
		}
		p.stack = p.stack[:len(p.stack)-1]
		top = &p.stack[len(p.stack)-1]
	}
	if !top.seq() && dash {
		return errFallback
	}
	return p.entry(top, ind, rest, n)
}

// push opens a collection whose first entry starts the line rest at column
// col, and parses that entry.
func (p *fastParser) push(node *yaml.Node, col int, rest []byte, n int) error {
	if len(p.stack) >= maxFastDepth {
		return errFallback
	}
	p.stack = append(p.stack, fastFrame{node: node, indent: col})
	return p.entry(&p.stack[len(p.stack)-1], col, rest, n)
}

// entry parses a key or a dash and what follows it on the line.
func (p *fastParser) entry(f *fastFrame, col int, rest []byte, n int) error {
	if f.seq() {
		i := 1
		for i < len(rest) && rest[i] == ' ' {
			i++
		}
		item, icol := rest[i:], col+i
		switch {
		case len(item) == 0 || item[0] == '#':
			f.open = true
			return nil
		case isDash(item):
			child := p.collection(yaml.SequenceNode, n, icol)
			p.add(f.node, child)
			return p.push(child, icol, item, n)
		case isKey(item):
			child := p.collection(yaml.MappingNode, n, icol)
			p.add(f.node, child)
			return p.push(child, icol, item, n)
		}
		v, err := p.value(item, icol, f.indent, n, p.keys.all)
		if err != nil {
			return err
		}
		if v != dropped && p.keepValue(v) {
			p.add(f.node, v)
		}
		return nil
	}
	k := keyLen(rest)
	if k == 0 {
		return errFallback
	}
	kept := p.keys.hasBytes(rest[:k])
	i := k + 1
	for i < len(rest) && rest[i] == ' ' {
		i++
	}
	if i == len(rest) || rest[i] == '#' {
		p.add(f.node, p.scalar(p.keys.str(rest[:k]), 0, n, col))
		f.open, f.openKept = true, kept
		return nil
	}
	v, err := p.value(rest[i:], col+i, f.indent, n, kept)
	if err != nil {
		return err
	}
	if kept || v != dropped && p.keepValue(v) {
		p.add(f.node, p.scalar(p.keys.str(rest[:k]), 0, n, col), v)
	}
	return nil
}

// collectionKind is the collection a line opens: a sequence for a dash,
// a mapping for a key; ok is false for anything else.
func collectionKind(dash bool, rest []byte) (kind yaml.Kind, ok bool) {
	switch {
	case dash:
		return yaml.SequenceNode, true
	case isKey(rest):
		return yaml.MappingNode, true
	}
	return 0, false
}

// isDash reports a block sequence entry: "-" followed by a space or the end.
func isDash(v []byte) bool { return len(v) > 0 && v[0] == '-' && (len(v) == 1 || v[1] == ' ') }

func isKey(v []byte) bool { return keyLen(v) > 0 }

// keyLen returns the length of a simple plain key followed by ":" and a
// space or the end of the line, or 0.
func keyLen(v []byte) int {
	if len(v) == 0 || !keyStart[v[0]] {
		return 0
	}
	i := 1
	for i < len(v) && keyByte[v[i]] {
		i++
	}
	if i < len(v) && i < 1000 && v[i] == ':' && (i+1 == len(v) || v[i+1] == ' ') {
		return i
	}
	return 0
}

// keyStart and keyByte are the characters of the keys the fast parser reads.
var keyStart, keyByte [256]bool

func init() {
	for c := 0; c < 256; c++ {
		b := byte(c)
		keyStart[c] = 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_' || b == '/'
		keyByte[c] = keyStart[c] || b == '.' || b == '-'
	}
}

func hasPrefix(v []byte, s string) bool { return len(v) >= len(s) && string(v[:len(s)]) == s }

func (p *fastParser) node() *yaml.Node { return p.arena.node() }

// add appends children to a collection, growing its content in the arena.
func (p *fastParser) add(n *yaml.Node, kids ...*yaml.Node) {
	if len(n.Content)+len(kids) > cap(n.Content) {
		c := p.arena.contentN(2*cap(n.Content) + len(kids))
		n.Content = append(c, n.Content...)
	}
	n.Content = append(n.Content, kids...)
}

func (p *fastParser) collection(kind yaml.Kind, line, col int) *yaml.Node {
	n := p.node()
	n.Kind, n.Line, n.Column, n.Tag = kind, line, col+1, "!!map"
	if kind == yaml.SequenceNode {
		n.Tag = "!!seq"
	}
	n.Content = p.arena.contentN(4)
	return n
}

func (p *fastParser) scalar(v string, style yaml.Style, line, col int) *yaml.Node {
	n := p.node()
	n.Kind, n.Style, n.Value, n.Line, n.Column = yaml.ScalarNode, style, v, line, col+1
	return n
}

// nullNode is the empty value of a key or dash with nothing after it.
func (p *fastParser) nullNode() *yaml.Node {
	n := p.node()
	n.Kind, n.Tag = yaml.ScalarNode, "!!null"
	return n
}

// closeNull gives the open key or dash an empty value: a null, which a
// sequence drops, and a mapping drops with its key unless the key is kept.
func (p *fastParser) closeNull(f *fastFrame) {
	f.open = false
	switch {
	case f.seq() && !p.keys.all:
	case f.seq(), f.openKept:
		p.add(f.node, p.nullNode())
	default:
		f.node.Content = f.node.Content[:len(f.node.Content)-1]
	}
}

// endDocument closes the open document, if any.
func (p *fastParser) endDocument() {
	if len(p.stack) > 0 {
		if top := &p.stack[len(p.stack)-1]; top.open {
			p.closeNull(top)
		}
	}
	p.stack = p.stack[:0]
	p.block = false
	p.anchors = nil
	if len(p.roots) > 0 && p.roots[len(p.roots)-1] == nil {
		p.roots = p.roots[:len(p.roots)-1]
	}
}
