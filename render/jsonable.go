package render

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// jsonable turns a decoded YAML document into the value JSON encodes it
// as, in one walk of the node tree. It gives what pinbot gave when it
// re-encoded the node and read it again with Kubernetes' YAML library
// (sigs.k8s.io/yaml, YAML 1.1), three parses for one: scalars typed as
// yaml.v3 resolved them (a string stays a string: "yes" and "0o14" in
// quotes too), merge keys applied in order with later keys winning, and
// map keys as that library writes them. The equivalence is a test
// (TestDecodeIsTheThreeParseDecode), on the YAML 1.1 edge cases.
func jsonable(n *yaml.Node) (any, error) {
	w := walker{budget: maxExpanded}
	return w.value(n)
}

// maxExpanded bounds the nodes one document expands to through aliases,
// which a few lines can make exponential ("a billion laughs").
const maxExpanded = 1_000_000

type walker struct{ budget int }

func (w *walker) value(n *yaml.Node) (any, error) {
	if w.budget--; w.budget < 0 {
		return nil, errors.New("the document expands to too many nodes through its aliases")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return w.value(n.Content[0])
	case yaml.AliasNode:
		return w.value(n.Alias)
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := w.value(c)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		return out, w.mapping(n, out)
	case yaml.ScalarNode:
		return scalar(n)
	}
	return nil, fmt.Errorf("line %d: a YAML node of kind %d", n.Line, n.Kind)
}

// mapping sets n's keys in out, in order, a later one over an earlier
// one; a merge key ("<<") sets each key of the mappings it names, the
// first of a list last.
func (w *walker) mapping(n *yaml.Node, out map[string]any) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" && k.Value == "<<" {
			if err := w.merge(v, out); err != nil {
				return err
			}
			continue
		}
		key, err := w.key(k)
		if err != nil {
			return err
		}
		if out[key], err = w.value(v); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) merge(v *yaml.Node, out map[string]any) error {
	if v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	switch v.Kind {
	case yaml.MappingNode:
		return w.mapping(v, out)
	case yaml.SequenceNode:
		for i := len(v.Content) - 1; i >= 0; i-- {
			m := v.Content[i]
			if m.Kind == yaml.AliasNode {
				m = m.Alias
			}
			if m.Kind != yaml.MappingNode {
				return fmt.Errorf("line %d: map merge requires map or sequence of maps as the value", v.Line)
			}
			if err := w.mapping(m, out); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("line %d: map merge requires map or sequence of maps as the value", v.Line)
}

// key is a mapping key as JSON has it: a string, or a number or a bool
// written out as Kubernetes' YAML library writes it.
func (w *walker) key(k *yaml.Node) (string, error) {
	if k.Kind == yaml.AliasNode {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("line %d: a mapping key must be a scalar", k.Line)
	}
	v, err := scalar(k)
	if err != nil {
		return "", err
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case bool:
		return strconv.FormatBool(v), nil
	case float64:
		switch s := strconv.FormatFloat(v, 'g', -1, 32); s {
		case "+Inf":
			return ".inf", nil
		case "-Inf":
			return "-.inf", nil
		case "NaN":
			return ".nan", nil
		default:
			return s, nil
		}
	}
	return "", fmt.Errorf("line %d: unsupported map key %q", k.Line, k.Value)
}

// scalar is n's value: a plain scalar as YAML 1.1 reads it (yes is
// true, as Kubernetes' YAML library has it), a quoted or block one as
// its text, one with a tag by that tag.
func scalar(n *yaml.Node) (any, error) {
	text := n.Value
	switch {
	case n.Style&yaml.TaggedStyle != 0:
	case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return text, nil
	default:
		return plain11(text), nil
	}
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		if b, ok := yaml11Bools[text]; ok {
			return b, nil
		}
	case "!!int":
		plain := strings.ReplaceAll(text, "_", "")
		if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return i, nil
		}
		if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return u, nil
		}
	case "!!float":
		plain := strings.ReplaceAll(text, "_", "")
		switch strings.ToLower(strings.TrimPrefix(plain, "+")) {
		case ".inf":
			return math.Inf(1), nil
		case "-.inf":
			return math.Inf(-1), nil
		case ".nan":
			return math.NaN(), nil
		}
		if f, err := strconv.ParseFloat(plain, 64); err == nil {
			return f, nil
		}
	case "!!binary":
		b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(text), ""))
		if err == nil {
			return string(b), nil
		}
	default: // !!str, !!timestamp (as its text, as Kubernetes reads it), and tags of one's own
		return text, nil
	}
	return nil, fmt.Errorf("line %d: cannot decode %q as %s", n.Line, text, n.ShortTag())
}

// yaml11Bools are the booleans of YAML 1.1, which an explicit !!bool
// takes.
var yaml11Bools = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true, "true": true, "True": true, "TRUE": true,
	"n": false, "N": false, "no": false, "No": false, "NO": false, "off": false, "Off": false, "OFF": false, "false": false, "False": false, "FALSE": false,
}

// plain11 is an untagged plain scalar as YAML 1.1 resolves it: its
// booleans, nulls, infinities, then an integer (any base Go reads, with
// underscores), then a float, else the text itself (a timestamp too).
func plain11(s string) any {
	if b, ok := yaml11Bools[s]; ok {
		return b
	}
	switch s {
	case "", "~", "null", "Null", "NULL":
		return nil
	case ".nan", ".NaN", ".NAN":
		return math.NaN()
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return math.Inf(1)
	case "-.inf", "-.Inf", "-.INF":
		return math.Inf(-1)
	}
	if c := s[0]; c != '+' && c != '-' && c != '.' && (c < '0' || c > '9') {
		return s
	}
	plain := strings.ReplaceAll(s, "_", "")
	if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return i
	}
	if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return u
	}
	if yaml11Float.MatchString(plain) {
		if f, err := strconv.ParseFloat(plain, 64); err == nil {
			return f
		}
	}
	return s
}

// yaml11Float is a float as YAML 1.1 writes one.
var yaml11Float = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
