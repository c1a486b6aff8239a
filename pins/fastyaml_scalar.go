package pins

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// keepValue reports whether a scalar or flow collection is kept where its
// key (if any) does not keep it: a flow collection with content, and a
// plain or quoted scalar holding "@sha256:", which may be a whole image
// reference with a digest (a pin whatever its key).
func (p *fastParser) keepValue(v *yaml.Node) bool {
	if v.Kind == yaml.ScalarNode {
		return p.keys.all || v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 && hasDigestRef(v.Value)
	}
	return p.keys.all || len(v.Content) > 0
}

// hasDigestRef is the cheap test for a scalar that may be an image
// reference with a digest.
func hasDigestRef[T string | []byte](v T) bool { return strings.Contains(string(v), "@sha256:") }

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
		if !want && !hasDigestRef(v[1:e-1]) {
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
	if !want && !hasDigestRef(v[:end]) {
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
		if !want && !hasDigestRef(v[start:end]) {
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

// isAlnum reports a lowercase letter or a digit.
func isAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
