package pins

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"sync"

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
				var kind yaml.Kind
				switch {
				case dash:
					kind = yaml.SequenceNode
				case isKey(rest):
					kind = yaml.MappingNode
				default:
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
		var kind yaml.Kind
		switch {
		case dash:
			kind = yaml.SequenceNode
		case isKey(rest):
			kind = yaml.MappingNode
		default:
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

// keepValue reports whether a scalar or flow collection is kept where its
// key (if any) does not keep it: only a flow collection with content is.
func (p *fastParser) keepValue(v *yaml.Node) bool {
	return p.keys.all || v.Kind != yaml.ScalarNode && len(v.Content) > 0
}

// dropped stands for a scalar the parse does not keep; it is never added to
// a tree.
var dropped = &yaml.Node{Kind: yaml.ScalarNode}

// value parses a scalar or flow collection filling the rest of a line, or
// the header of a block scalar whose lines follow. A scalar that is not
// wanted comes back as dropped.
func (p *fastParser) value(v []byte, col, parent, n int, want bool) (*yaml.Node, error) {
	switch v[0] {
	case '&':
		// An anchor on a scalar or flow collection on the same line.
		name, i := anchorName(v)
		if i == 0 || i == len(v) || v[i] != ' ' {
			return nil, errFallback
		}
		j := skipSpaces(v, i)
		if j == len(v) || v[j] == '#' || v[j] == '|' || v[j] == '>' || v[j] == '&' || v[j] == '*' {
			return nil, errFallback
		}
		node, err := p.value(v[j:], col+j, parent, n, want)
		if err != nil {
			return nil, err
		}
		if p.anchors == nil {
			p.anchors = map[string]*yaml.Node{}
		}
		if node == dropped {
			p.anchors[string(name)] = nil
			return node, nil
		}
		node.Anchor, node.Column = string(name), col+1
		p.anchors[node.Anchor] = node
		return node, nil
	case '*':
		name, i := anchorName(v)
		if i == 0 || !trailer(v[i:]) {
			return nil, errFallback
		}
		target, ok := p.anchors[string(name)]
		if !ok {
			return nil, errFallback // yaml.v3 reports the unknown anchor
		}
		if !want {
			return dropped, nil
		}
		a := p.node()
		a.Kind, a.Value, a.Alias, a.Line, a.Column = yaml.AliasNode, string(name), target, n, col+1
		return a, nil
	case '|', '>':
		i := 1
		if i < len(v) && (v[i] == '-' || v[i] == '+') {
			i++
		}
		if i < len(v) && (v[i] != ' ' || !onlyComment(v[i:])) {
			return nil, errFallback
		}
		p.block, p.blockParent, p.blockIndent, p.blockLead = true, parent, 0, 0
		if !want {
			return dropped, nil
		}
		style := yaml.LiteralStyle
		if v[0] == '>' {
			style = yaml.FoldedStyle
		}
		return p.scalar("", style, n, col), nil
	case '[', '{':
		node, i, err := p.flowNode(v, 0, col, n, 0, want)
		if err != nil {
			return nil, err
		}
		if i < len(v) && !(v[i] == '#' && v[i-1] == ' ') {
			return nil, errFallback
		}
		return node, nil
	case '"', '\'':
		e, ok := quoted(v, 0)
		if !ok || !trailer(v[e:]) {
			return nil, errFallback
		}
		if !want {
			return dropped, nil
		}
		style := yaml.DoubleQuotedStyle
		if v[0] == '\'' {
			style = yaml.SingleQuotedStyle
		}
		return p.scalar(string(v[1:e-1]), style, n, col), nil
	}
	if !plainStart(v) {
		return nil, errFallback
	}
	end := len(v)
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '#' && v[i-1] == ' ' {
			end = i
			break
		} else if c == ':' && (i+1 == len(v) || v[i+1] == ' ') {
			return nil, errFallback // a key where a value belongs
		}
	}
	for end > 0 && v[end-1] == ' ' {
		end--
	}
	if !want {
		return dropped, nil
	}
	return p.scalar(string(v[:end]), 0, n, col), nil
}

// flowNode parses a single-line flow collection or flow scalar at v[i] and
// returns the offset after it and any spaces that follow. A scalar that is
// not wanted comes back as dropped.
func (p *fastParser) flowNode(v []byte, i, col0, n, depth int, want bool) (*yaml.Node, int, error) {
	if depth > maxFastDepth || i >= len(v) {
		return nil, 0, errFallback
	}
	if v[i] != '[' && v[i] != '{' {
		start, end, next, style, err := flowScalar(v, i)
		if err != nil {
			return nil, 0, err
		}
		if !want {
			return dropped, next, nil
		}
		return p.scalar(string(v[start:end]), style, n, col0+i), next, nil
	}
	kind, closer := yaml.SequenceNode, byte(']')
	if v[i] == '{' {
		kind, closer = yaml.MappingNode, '}'
	}
	node := p.node()
	node.Kind, node.Style, node.Line, node.Column = kind, yaml.FlowStyle, n, col0+i+1
	i = skipSpaces(v, i+1)
	for {
		if i < len(v) && v[i] == closer {
			return node, skipSpaces(v, i+1), nil
		}
		if i >= len(v) {
			return nil, 0, errFallback
		}
		if kind == yaml.SequenceNode {
			child, j, err := p.flowNode(v, i, col0, n, depth+1, p.keys.all)
			if err != nil {
				return nil, 0, err
			}
			if child != dropped && p.keepValue(child) {
				p.add(node, child)
			}
			i = j
		} else {
			if v[i] == '[' || v[i] == '{' {
				return nil, 0, errFallback // a collection as a key
			}
			start, end, next, style, err := flowScalar(v, i)
			if err != nil {
				return nil, 0, err
			}
			if next+1 >= len(v) || v[next] != ':' || v[next+1] != ' ' {
				return nil, 0, errFallback
			}
			kept := p.keys.hasBytes(v[start:end])
			val, j, err := p.flowNode(v, skipSpaces(v, next+1), col0, n, depth+1, kept)
			if err != nil {
				return nil, 0, err
			}
			if kept || val != dropped && p.keepValue(val) {
				key := p.scalar(p.keys.str(v[start:end]), style, n, col0+i)
				p.add(node, key, val)
			}
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
}

// flowScalar reads a quoted or plain scalar in a flow collection at v[i]:
// its text is v[start:end], and next is the offset after it and any spaces.
func flowScalar(v []byte, i int) (start, end, next int, style yaml.Style, err error) {
	if v[i] == '"' || v[i] == '\'' {
		e, ok := quoted(v, i)
		if !ok {
			return 0, 0, 0, 0, errFallback
		}
		style = yaml.DoubleQuotedStyle
		if v[i] == '\'' {
			style = yaml.SingleQuotedStyle
		}
		return i + 1, e - 1, skipSpaces(v, e), style, nil
	}
	if !plainStart(v[i:]) || v[i] == '-' {
		return 0, 0, 0, 0, errFallback
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
				return 0, 0, 0, 0, errFallback
			}
		}
	}
	return i, j, skipSpaces(v, j), 0, nil
}

// quoted checks a single-line quoted scalar without escapes at v[i] and
// returns the offset after its closing quote.
func quoted(v []byte, i int) (int, bool) {
	q := v[i]
	for j := i + 1; j < len(v); j++ {
		switch v[j] {
		case '\\':
			if q == '"' {
				return 0, false
			}
		case q:
			if q == '\'' && j+1 < len(v) && v[j+1] == '\'' {
				return 0, false
			}
			return j + 1, true
		}
	}
	return 0, false
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

// keySet is the set of mapping keys a parse keeps scalar values for, or
// every key (allKeys). Lookups first check the key's length against the
// lengths of the names, which rules out most keys without comparing bytes.
type keySet struct {
	all   bool
	names []string
	lens  uint64 // bit n is set when a name is n bytes long
}

func newKeySet(names ...string) keySet {
	k := keySet{names: names}
	for _, n := range names {
		k.lens |= 1 << min(len(n), 63)
	}
	return k
}

// The keys each file type needs; see yamlSites.
var (
	allKeys       = keySet{all: true}
	manifestKeys  = newKeySet("image", "registry", "repository", "tag", "digest")
	kustomizeKeys = newKeySet("image", "registry", "repository", "tag", "digest", "images", "name", "newName", "newTag")
	pinsFileKeys  = newKeySet("pins", "image", "tag", "digest")
	noKeys        = newKeySet()
)

func (k keySet) has(key string) bool {
	if k.all {
		return true
	}
	if k.lens&(1<<min(len(key), 63)) == 0 {
		return false
	}
	for _, s := range k.names {
		if s == key {
			return true
		}
	}
	return false
}

// hasBytes is has for a key not yet a string; it does not allocate.
func (k keySet) hasBytes(key []byte) bool { return k.has(string(key)) }

// str returns a kept key as a string without allocating, and "" for any
// other key: a key that is not kept only holds a collection, and finding
// pins never reads its text.
func (k keySet) str(b []byte) string {
	if k.all {
		return string(b)
	}
	if k.lens&(1<<min(len(b), 63)) != 0 {
		for _, s := range k.names {
			if s == string(b) {
				return s
			}
		}
	}
	return ""
}

// arena hands out nodes, small content slices and other per-file buffers
// from slabs that are reused file after file, since a scan otherwise spends
// most of its time allocating nodes it drops a moment later.
type arena struct {
	nodes  [][]yaml.Node
	ni, nj int // next node: nodes[ni][nj]
	ptrs   [][]*yaml.Node
	pi, pj int
	stack  []fastFrame
	starts []int     // line starts
	sites  []site    // found sites
	repos  repoCache // kept across resets
}

const slabLen = 256

// arenas recycles arenas between files and goroutines.
var arenas = sync.Pool{New: func() any { return &arena{} }}

func getArena() *arena { return arenas.Get().(*arena) }

// putArena resets an arena and returns it for reuse; nothing from it may
// be used afterwards.
func putArena(a *arena) {
	a.reset()
	arenas.Put(a)
}

func (a *arena) node() *yaml.Node {
	if a.ni == len(a.nodes) {
		a.nodes = append(a.nodes, make([]yaml.Node, slabLen))
	}
	n := &a.nodes[a.ni][a.nj]
	if a.nj++; a.nj == slabLen {
		a.ni, a.nj = a.ni+1, 0
	}
	return n
}

// contentN returns an empty slice with room for k children.
func (a *arena) contentN(k int) []*yaml.Node {
	const slab = slabLen * 4
	if k > slab/4 {
		return make([]*yaml.Node, 0, k)
	}
	if a.pi < len(a.ptrs) && a.pj+k > slab {
		a.pi, a.pj = a.pi+1, 0
	}
	if a.pi == len(a.ptrs) {
		a.ptrs = append(a.ptrs, make([]*yaml.Node, slab))
	}
	c := a.ptrs[a.pi][a.pj : a.pj : a.pj+k]
	a.pj += k
	return c
}

// reset zeroes what was handed out, for reuse.
func (a *arena) reset() {
	for i := 0; i <= a.ni && i < len(a.nodes); i++ {
		end := slabLen
		if i == a.ni {
			end = a.nj
		}
		clear(a.nodes[i][:end])
	}
	for i := 0; i <= a.pi && i < len(a.ptrs); i++ {
		end := slabLen * 4
		if i == a.pi {
			end = a.pj
		}
		clear(a.ptrs[i][:end])
	}
	a.ni, a.nj, a.pi, a.pj = 0, 0, 0, 0
	a.stack = a.stack[:0]
}

// anchorName reads the name after "&" or "*" at v[0] and returns it and the
// offset after it; the offset is 0 if the name is empty.
func anchorName(v []byte) ([]byte, int) {
	i := 1
	for i < len(v) && (isAlnum(v[i]) || 'A' <= v[i] && v[i] <= 'Z' || v[i] == '_' || v[i] == '-') {
		i++
	}
	if i == 1 {
		return nil, 0
	}
	return v[1:i], i
}

// lineStarts appends to starts the offset after each "\n" in src, and
// reports whether src holds only printable ASCII and "\n". It looks at
// eight bytes at a time, since it is the one pass over every byte.
func lineStarts(src []byte, starts []int) ([]int, bool) {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
		low7 = 0x7f7f7f7f7f7f7f7f
		nl   = 0x0a0a0a0a0a0a0a0a
	)
	i := 0
	for ; i+8 <= len(src); i += 8 {
		w := binary.LittleEndian.Uint64(src[i:])
		// Mark each "\n" byte with exactly 0x80, then make it 0x2a.
		x := w ^ nl
		z := ^(((x & low7) + low7) | x | low7)
		w |= z >> 2
		// Any byte below 0x20, or above 0x7e?
		if (w-0x20*ones)&^w&high|((w+ones)|w)&high != 0 {
			return starts, false
		}
		for ; z != 0; z &= z - 1 {
			starts = append(starts, i+bits.TrailingZeros64(z)/8+1)
		}
	}
	for ; i < len(src); i++ {
		switch c := src[i]; {
		case c == '\n':
			starts = append(starts, i+1)
		case c >= 0x7f || c < 0x20:
			return starts, false
		}
	}
	return starts, true
}
