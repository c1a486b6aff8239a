// Package ignore decides which fields of which objects pinbot leaves to
// others: an app's ignore rules name fields that are never drift and never
// healed. Pure: it reads rules and objects, and talks to nothing.
package ignore

import (
	"path"
	"sort"
	"strconv"
	"strings"

	"pinbot.dev/pinbot/reconciler/object"
)

// Rule names fields of matching objects that are never drift.
type Rule struct {
	// Object matches "group/Kind/name" ("Kind/name" for the core group);
	// each part may be a path.Match glob, e.g. "apps/Deployment/web-*".
	Object string `yaml:"object"`
	// Pointers are RFC 6901 JSON pointers into the object, e.g.
	// "/spec/replicas".
	Pointers []string `yaml:"pointers"`
}

// Matches reports whether the field at pointer (an RFC 6901 JSON pointer
// into the object, e.g. "/spec/replicas") of the object ref falls under
// one of rules: the rule's object glob matches ref and one of its pointers
// is the field or one of its parents. Ignored fields are never drift and
// never healed. Pure.
//
// A rule's object is "group/Kind/name", or "Kind/name" for the core group;
// each part is a path.Match glob ("apps/Deployment/web-*", "*/*/cache").
// A pointer segment "*" matches any one segment, so
// "/spec/template/spec/containers/*/image" covers every container.
func Matches(rules []Rule, ref object.Ref, pointer string) bool {
	for _, r := range rules {
		if !r.matchesObject(ref) {
			continue
		}
		for _, p := range r.Pointers {
			if pointerCovers(p, pointer) {
				return true
			}
		}
	}
	return false
}

// matchesObject reports whether the rule's object glob matches ref.
// Malformed globs match nothing (Validate rejects them).
func (r Rule) matchesObject(ref object.Ref) bool {
	parts := strings.Split(r.Object, "/")
	var group, kind, name string
	switch len(parts) {
	case 2:
		kind, name = parts[0], parts[1]
	case 3:
		group, kind, name = parts[0], parts[1], parts[2]
	default:
		return false
	}
	return glob(group, ref.Group) && glob(kind, ref.Kind) && glob(name, ref.Name)
}

func glob(pattern, s string) bool {
	ok, err := path.Match(pattern, s)
	return err == nil && ok
}

// pointerCovers reports whether rule (a JSON pointer, "*" segments
// matching any one segment) is field or a parent of it.
func pointerCovers(rule, field string) bool {
	if rule == "" || rule == "/" {
		return true // the whole object
	}
	rs := strings.Split(strings.TrimPrefix(rule, "/"), "/")
	fs := strings.Split(strings.TrimPrefix(field, "/"), "/")
	if len(rs) > len(fs) {
		return false
	}
	for i, seg := range rs {
		if seg != "*" && seg != fs[i] {
			return false
		}
	}
	return true
}

// EscapePointer escapes one JSON pointer segment (RFC 6901: "~" as "~0",
// "/" as "~1").
func EscapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// Keep sets, in obj (what pinbot is about to apply for ref), every
// field an ignore rule names to its value in live, or removes it where
// live has none. Pure.
func Keep(obj, live map[string]any, rules []Rule, ref object.Ref) {
	for _, r := range rules {
		if !r.matchesObject(ref) {
			continue
		}
		for _, p := range r.Pointers {
			if p == "" || p == "/" {
				continue
			}
			var segs []string
			for _, s := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
				segs = append(segs, strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~"))
			}
			keepAt(obj, live, segs)
		}
	}
}

// keepAt walks segs through obj (a map or list) and live side by side;
// "*" visits every key or index of obj.
func keepAt(obj, live any, segs []string) {
	keys := func() []string {
		if segs[0] != "*" {
			return []string{segs[0]}
		}
		var ks []string
		switch o := obj.(type) {
		case map[string]any:
			for k := range o {
				ks = append(ks, k)
			}
			sort.Strings(ks)
		case []any:
			for i := range o {
				ks = append(ks, strconv.Itoa(i))
			}
		}
		return ks
	}()
	for _, k := range keys {
		switch o := obj.(type) {
		case map[string]any:
			lm, _ := live.(map[string]any)
			lv, lok := lm[k]
			if len(segs) == 1 {
				if lok {
					o[k] = copyJSON(lv)
				} else {
					delete(o, k)
				}
				continue
			}
			if child, ok := o[k]; ok {
				keepAt(child, lv, segs[1:])
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(o) {
				continue
			}
			ll, _ := live.([]any)
			var lv any
			lok := i < len(ll)
			if lok {
				lv = ll[i]
			}
			if len(segs) == 1 {
				if lok {
					o[i] = copyJSON(lv)
				}
				continue
			}
			keepAt(o[i], lv, segs[1:])
		}
	}
}

// copyJSON deep-copies a decoded JSON value.
func copyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = copyJSON(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = copyJSON(e)
		}
		return l
	}
	return v
}
