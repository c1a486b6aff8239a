// Package jsonkeys reads JSON that pinbot wrote before its keys became
// camelCase, as Kubernetes spells them: a stored status, history, ledger
// or pull request block written as {"git_digest": …} decodes as
// {"gitDigest": …} does.
//
// The renaming follows the target's Go type, field by field: only the
// keys that name a struct field are renamed. Map keys are data (app
// names, images, environments) and stay as they are, and a type that
// decodes itself (time.Time, anything with UnmarshalJSON) is left to do
// so.
package jsonkeys

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
	"unicode"
)

// Unmarshal is json.Unmarshal that also accepts, for every struct field
// whose key is camelCase, the snake_case key the same field had before.
// When both spellings are present, the camelCase one wins.
func Unmarshal(data []byte, v any) error {
	if bytes.IndexByte(data, '_') < 0 {
		// No snake_case key: what pinbot writes now decodes once, as
		// plain JSON. (encoding/json never escapes '_' as \u005f.)
		return json.Unmarshal(data, v)
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&tree); err != nil {
		// Let encoding/json name the syntax error as it always does.
		return json.Unmarshal(data, v)
	}
	if !rename(tree, reflect.TypeOf(v)) {
		return json.Unmarshal(data, v)
	}
	renamed, err := json.Marshal(tree)
	if err != nil {
		return json.Unmarshal(data, v)
	}
	return json.Unmarshal(renamed, v)
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// rename renames the legacy keys of node, a decoded JSON value, that t
// decodes from, and reports whether it renamed any.
func rename(node any, t reflect.Type) bool {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || decodesItself(t) {
		return false
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := node.(map[string]any)
		if !ok {
			return false
		}
		return renameFields(obj, t)
	case reflect.Map:
		obj, ok := node.(map[string]any)
		if !ok {
			return false
		}
		changed := false
		for _, v := range obj {
			changed = rename(v, t.Elem()) || changed
		}
		return changed
	case reflect.Slice, reflect.Array:
		list, ok := node.([]any)
		if !ok {
			return false
		}
		changed := false
		for _, v := range list {
			changed = rename(v, t.Elem()) || changed
		}
		return changed
	}
	return false
}

func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || p.Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || p.Implements(textUnmarshaler)
}

// renameFields renames obj's keys for struct type t, whose embedded
// structs share obj as encoding/json flattens them.
func renameFields(obj map[string]any, t reflect.Type) bool {
	changed := false
	for i := range t.NumField() {
		f := t.Field(i)
		name, embedded := key(f)
		switch {
		case name == "-":
			continue
		case embedded:
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			changed = renameFields(obj, ft) || changed
			continue
		case !f.IsExported() || name == "":
			// An untagged field was never renamed.
			continue
		}
		if old := snake(name); old != name {
			if v, ok := obj[old]; ok {
				if _, taken := obj[name]; !taken {
					obj[name] = v
				}
				delete(obj, old)
				changed = true
			}
		}
		if v, ok := obj[name]; ok {
			changed = rename(v, f.Type) || changed
		}
	}
	return changed
}

// key is the JSON key of f, and whether f is an untagged embedded struct
// whose fields encoding/json lifts into its parent.
func key(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	name, _, _ := strings.Cut(tag, ",")
	if tag == "-" {
		return "-", false
	}
	if name == "" && f.Anonymous {
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			return "", true
		}
	}
	return name, false
}

// snake is the snake_case spelling of a camelCase key: gitDigest is
// git_digest, prURL is pr_url, closedPRNumber is closed_pr_number.
func snake(camel string) string {
	rs := []rune(camel)
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
