package pins

import (
	"errors"

	"gopkg.in/yaml.v3"
)

// errFallback tells parseYAML to hand a file to yaml.v3.
var errFallback = errors.New("outside the fast subset")

// parseFast parses the plain subset of YAML most manifests are written in,
// about twenty times faster than yaml.v3, and returns the root node of each
// document, built as yaml.v3 would build it (kinds, styles, values, lines
// and columns of scalars). It returns errFallback for anything outside the
// subset, so it never judges a file malformed; yaml.v3 does that.
//
// The subset: printable ASCII with "\n" line breaks; block mappings and
// sequences rooted at column 0; keys of [A-Za-z0-9_./-] characters; plain
// scalars and single-line quoted scalars without escapes; literal and folded
// block scalars without an indentation indicator; single-line flow
// collections; comments; "---" document markers. Anchors, aliases, tags,
// multi-line plain or quoted scalars, complex keys, tabs, CR, non-ASCII and
// directives are outside it.
//
// The fuzz test FuzzParse checks that whenever it accepts an input, yaml.v3
// accepts it too and builds the same tree.
func parseFast(src []byte) ([]*yaml.Node, error) {
	for _, c := range src {
		if c >= 0x7f || c < 0x20 && c != '\n' {
			return nil, errFallback
		}
	}
	p := &fastParser{}
	for off, line := 0, 1; off < len(src); line++ {
		end := off
		for end < len(src) && src[end] != '\n' {
			end++
		}
		if err := p.line(src[off:end], line); err != nil {
			return nil, err
		}
		off = end + 1
	}
	p.endDocument()
	return p.roots, nil
}

type fastFrame struct {
	node   *yaml.Node
	indent int  // column (0-based) of the keys or dashes
	open   bool // the last key or dash awaits a value on a later line
}

func (f *fastFrame) seq() bool { return f.node.Kind == yaml.SequenceNode }

type fastParser struct {
	roots []*yaml.Node
	stack []fastFrame

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
				var kind yaml.Kind
				switch {
				case dash:
					kind = yaml.SequenceNode
				case isKey(rest):
					kind = yaml.MappingNode
				default:
					return errFallback
				}
				child := collection(kind, n, ind)
				top.node.Content = append(top.node.Content, child)
				return p.push(child, ind, rest, n)
			}
			top.node.Content = append(top.node.Content, nullNode(n))
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
		var kind yaml.Kind
		switch {
		case dash:
			kind = yaml.SequenceNode
		case isKey(rest):
			kind = yaml.MappingNode
		default:
			return errFallback
		}
		root := collection(kind, n, 0)
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
			child := collection(yaml.SequenceNode, n, icol)
			f.node.Content = append(f.node.Content, child)
			return p.push(child, icol, item, n)
		case isKey(item):
			child := collection(yaml.MappingNode, n, icol)
			f.node.Content = append(f.node.Content, child)
			return p.push(child, icol, item, n)
		}
		v, err := p.value(item, icol, f.indent, n)
		if err != nil {
			return err
		}
		f.node.Content = append(f.node.Content, v)
		return nil
	}
	k := keyLen(rest)
	if k == 0 {
		return errFallback
	}
	f.node.Content = append(f.node.Content, scalar(string(rest[:k]), 0, n, col))
	i := k + 1
	for i < len(rest) && rest[i] == ' ' {
		i++
	}
	if i == len(rest) || rest[i] == '#' {
		f.open = true
		return nil
	}
	v, err := p.value(rest[i:], col+i, f.indent, n)
	if err != nil {
		return err
	}
	f.node.Content = append(f.node.Content, v)
	return nil
}

// value parses a scalar or flow collection filling the rest of a line, or
// the header of a block scalar whose lines follow.
func (p *fastParser) value(v []byte, col, parent, n int) (*yaml.Node, error) {
	switch v[0] {
	case '|', '>':
		i := 1
		if i < len(v) && (v[i] == '-' || v[i] == '+') {
			i++
		}
		if i < len(v) && (v[i] != ' ' || !onlyComment(v[i:])) {
			return nil, errFallback
		}
		p.block, p.blockParent, p.blockIndent, p.blockLead = true, parent, 0, 0
		style := yaml.LiteralStyle
		if v[0] == '>' {
			style = yaml.FoldedStyle
		}
		return scalar("", style, n, col), nil
	case '[', '{':
		node, i, err := flowNode(v, 0, col, n, 0)
		if err != nil {
			return nil, err
		}
		if i < len(v) && !(v[i] == '#' && v[i-1] == ' ') {
			return nil, errFallback
		}
		return node, nil
	case '"', '\'':
		s, i, ok := quoted(v, 0)
		if !ok || !trailer(v[i:]) {
			return nil, errFallback
		}
		style := yaml.DoubleQuotedStyle
		if v[0] == '\'' {
			style = yaml.SingleQuotedStyle
		}
		return scalar(s, style, n, col), nil
	}
	if !plainStart(v) {
		return nil, errFallback
	}
	end := 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '#' && v[i-1] == ' ':
			return scalar(string(v[:end]), 0, n, col), nil
		case c == ':' && (i+1 == len(v) || v[i+1] == ' '):
			return nil, errFallback // a key where a value belongs
		case c != ' ':
			end = i + 1
		}
	}
	return scalar(string(v[:end]), 0, n, col), nil
}

// flowNode parses a single-line flow collection or flow scalar at v[i] and
// returns the offset after it and any spaces that follow.
func flowNode(v []byte, i, col0, n, depth int) (*yaml.Node, int, error) {
	if depth > maxFastDepth {
		return nil, 0, errFallback
	}
	if i >= len(v) {
		return nil, 0, errFallback
	}
	switch v[i] {
	case '[', '{':
		kind, closer := yaml.SequenceNode, byte(']')
		if v[i] == '{' {
			kind, closer = yaml.MappingNode, '}'
		}
		node := &yaml.Node{Kind: kind, Style: yaml.FlowStyle, Line: n, Column: col0 + i + 1}
		i = skipSpaces(v, i+1)
		for {
			if i < len(v) && v[i] == closer {
				return node, skipSpaces(v, i+1), nil
			}
			if i < len(v) && (v[i] == '[' || v[i] == '{') && kind == yaml.MappingNode {
				return nil, 0, errFallback // a collection as a key
			}
			child, j, err := flowNode(v, i, col0, n, depth+1)
			if err != nil {
				return nil, 0, err
			}
			node.Content = append(node.Content, child)
			i = j
			if kind == yaml.MappingNode {
				if child.Kind != yaml.ScalarNode || i+1 >= len(v) || v[i] != ':' || v[i+1] != ' ' {
					return nil, 0, errFallback
				}
				val, j, err := flowNode(v, skipSpaces(v, i+1), col0, n, depth+1)
				if err != nil {
					return nil, 0, err
				}
				node.Content = append(node.Content, val)
				i = j
			}
			switch {
			case i < len(v) && v[i] == ',':
				i = skipSpaces(v, i+1)
			case i < len(v) && v[i] == closer:
			default:
				return nil, 0, errFallback
			}
		}
	case '"', '\'':
		s, j, ok := quoted(v, i)
		if !ok {
			return nil, 0, errFallback
		}
		style := yaml.DoubleQuotedStyle
		if v[i] == '\'' {
			style = yaml.SingleQuotedStyle
		}
		return scalar(s, style, n, col0+i), skipSpaces(v, j), nil
	}
	if !plainStart(v[i:]) || v[i] == '-' {
		return nil, 0, errFallback
	}
	j := i
	for ; j < len(v); j++ {
		c := v[j]
		if c == ' ' || c == ',' || c == '[' || c == ']' || c == '{' || c == '}' || c == '?' {
			break
		}
		if c == ':' {
			if j+1 < len(v) && v[j+1] == ' ' {
				break
			}
			if j+1 == len(v) || isFlowIndicator(v[j+1]) {
				return nil, 0, errFallback
			}
		}
	}
	return scalar(string(v[i:j]), 0, n, col0+i), skipSpaces(v, j), nil
}

// quoted reads a single-line quoted scalar without escapes at v[i] and
// returns its value and the offset after the closing quote.
func quoted(v []byte, i int) (string, int, bool) {
	q := v[i]
	for j := i + 1; j < len(v); j++ {
		switch v[j] {
		case '\\':
			if q == '"' {
				return "", 0, false
			}
		case q:
			if q == '\'' && j+1 < len(v) && v[j+1] == '\'' {
				return "", 0, false
			}
			return string(v[i+1 : j]), j + 1, true
		}
	}
	return "", 0, false
}

// plainStart reports whether a plain scalar may start v in block context,
// conservatively: indicators and "-" followed by a space are refused.
func plainStart(v []byte) bool {
	switch v[0] {
	case '-':
		return len(v) > 1 && v[1] != ' '
	case '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', ' ':
		return false
	}
	return true
}

func isFlowIndicator(c byte) bool {
	return c == ',' || c == '[' || c == ']' || c == '{' || c == '}'
}

// trailer reports whether the rest of a line after a value is empty or a
// comment preceded by a space.
func trailer(v []byte) bool {
	return len(v) == 0 || v[0] == ' ' && onlyComment(v)
}

// onlyComment reports whether v is spaces, optionally followed by a comment
// that starts after at least one space.
func onlyComment(v []byte) bool {
	i := skipSpaces(v, 0)
	return i == len(v) || v[i] == '#' && i > 0
}

func skipSpaces(v []byte, i int) int {
	for i < len(v) && v[i] == ' ' {
		i++
	}
	return i
}

// isDash reports a block sequence entry: "-" followed by a space or the end.
func isDash(v []byte) bool { return len(v) > 0 && v[0] == '-' && (len(v) == 1 || v[1] == ' ') }

func isKey(v []byte) bool { return keyLen(v) > 0 }

// keyLen returns the length of a simple plain key followed by ":" and a
// space or the end of the line, or 0.
func keyLen(v []byte) int {
	if len(v) == 0 || !(isAlnum(v[0]) || 'A' <= v[0] && v[0] <= 'Z' || v[0] == '_' || v[0] == '/') {
		return 0
	}
	i := 1
	for i < len(v) && i < 1000 {
		c := v[i]
		if isAlnum(c) || 'A' <= c && c <= 'Z' || c == '_' || c == '.' || c == '-' || c == '/' {
			i++
			continue
		}
		break
	}
	if i < len(v) && v[i] == ':' && (i+1 == len(v) || v[i+1] == ' ') {
		return i
	}
	return 0
}

func hasPrefix(v []byte, s string) bool { return len(v) >= len(s) && string(v[:len(s)]) == s }

func collection(kind yaml.Kind, line, col int) *yaml.Node {
	tag := "!!map"
	if kind == yaml.SequenceNode {
		tag = "!!seq"
	}
	return &yaml.Node{Kind: kind, Tag: tag, Line: line, Column: col + 1}
}

func scalar(v string, style yaml.Style, line, col int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Style: style, Value: v, Line: line, Column: col + 1}
}

// nullNode is the empty value of a key or dash with nothing after it.
func nullNode(line int) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: line}
}

// endDocument closes the open document, if any.
func (p *fastParser) endDocument() {
	if len(p.stack) > 0 {
		if top := &p.stack[len(p.stack)-1]; top.open {
			top.open = false
			top.node.Content = append(top.node.Content, nullNode(0))
		}
	}
	p.stack = p.stack[:0]
	p.block = false
	if len(p.roots) > 0 && p.roots[len(p.roots)-1] == nil {
		p.roots = p.roots[:len(p.roots)-1]
	}
}
