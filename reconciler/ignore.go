package reconciler

import (
	"path"
	"strings"
)

// Ignored reports whether the field at pointer (an RFC 6901 JSON pointer
// into the object, e.g. "/spec/replicas") of the object ref falls under
// one of rules: the rule's object glob matches ref and one of its pointers
// is the field or one of its parents. Ignored fields are never drift and
// never healed. Pure.
//
// A rule's object is "group/Kind/name", or "Kind/name" for the core group;
// each part is a path.Match glob ("apps/Deployment/web-*", "*/*/cache").
// A pointer segment "*" matches any one segment, so
// "/spec/template/spec/containers/*/image" covers every container.
func Ignored(rules []IgnoreRule, ref ObjectRef, pointer string) bool {
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
func (r IgnoreRule) matchesObject(ref ObjectRef) bool {
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

// escapePointer escapes one JSON pointer segment (RFC 6901: "~" as "~0",
// "/" as "~1").
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
