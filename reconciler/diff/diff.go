// Package diff compares what Git declares with what the cluster holds,
// field by field, on exactly the fields Git's manifest sets (the fields a
// server-side apply of it owns), and says which objects are not as pinbot
// last applied them. Pure: it reads objects and talks to nothing.
package diff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"pinbot.dev/pinbot/reconciler/hook"

	"pinbot.dev/pinbot/reconciler/ignore"
	"pinbot.dev/pinbot/reconciler/object"
)

// Field is one field Git sets whose value on the cluster differs from
// Git's: someone or something changed the cluster.
type Field struct {
	Object object.Ref `json:"object"`
	// Path reads "spec.replicas" or
	// "spec.template.spec.containers[name=app].image".
	Path string `json:"path"`
	// Pointer is the field's RFC 6901 JSON pointer in the live object
	// ("/spec/template/spec/containers/0/image"), what ignore rules match.
	Pointer string `json:"pointer"`
	// Git is the value a server-side apply of Git's manifest would set;
	// Live the cluster's, nil when the field is absent. Secret data reads
	// "<redacted>".
	Git  any `json:"git"`
	Live any `json:"live"`
	// LiveAbsent says the cluster does not have the field at all.
	LiveAbsent bool `json:"liveAbsent,omitempty"`
}

// String reads "Deployment web/web: spec.replicas git=3 live=1", or
// "Deployment web/web: missing from the cluster" for a whole object.
func (d Field) String() string {
	if d.Path == "" {
		return fmt.Sprintf("%s: missing from the cluster", d.Object)
	}
	return fmt.Sprintf("%s: %s git=%s live=%s", d.Object, d.Path, formatValue(d.Git, true), formatValue(d.Live, !d.LiveAbsent))
}

// redacted replaces Secret values in drift reports.
const redacted = "<redacted>"

// stampPointers are the fields pinbot adds to every object it applies:
// their drift is not Git's content (Compare checks them).
var stampPointers = map[string]bool{
	"/metadata/labels/" + ignore.EscapePointer(object.LabelApp):            true,
	"/metadata/annotations/" + ignore.EscapePointer(object.AnnotationHash): true,
}

// Fields compares dryRun, the object a server-side apply of Git's
// manifest would produce (a dry run with field manager "pinbot" and forced
// conflicts), with live, the object in the cluster, on exactly the fields
// the dry run's managed-fields entry of manager "pinbot" (operation Apply)
// lists: the fields Git's manifest sets. A field Git does not set is never
// drift, whoever changed it. Fields under an ignore rule are skipped. Pure.
func Fields(dryRun, live *unstructured.Unstructured, rules []ignore.Rule) ([]Field, error) {
	ref := object.RefOf(dryRun)
	owned, err := ownedFields(dryRun)
	if err != nil {
		return nil, fmt.Errorf("reading the fields pinbot manages on %s: %w", ref, err)
	}
	secret := ref.Group == "" && ref.Kind == "Secret"
	var out []Field
	owned.Leaves().Iterate(func(p fieldpath.Path) {
		gv, gptr, ok := locate(dryRun.Object, p)
		if !ok {
			return // owned but unset: nothing Git asks for
		}
		lv, lptr, lok := locate(live.Object, p)
		if lok && SameValue(gv, lv) {
			return
		}
		ptr := gptr
		if lok {
			ptr = lptr
		}
		if stampPointers[gptr] || ignore.Matches(rules, ref, gptr) || ignore.Matches(rules, ref, ptr) {
			return
		}
		d := Field{Object: ref, Path: pathString(p), Pointer: ptr, Git: gv, Live: lv, LiveAbsent: !lok}
		if secret && (strings.HasPrefix(ptr, "/data/") || strings.HasPrefix(ptr, "/stringData/")) {
			d.Git = redacted
			if lok {
				d.Live = redacted
			}
		}
		out = append(out, d)
	})
	return out, nil
}

// ownedFields parses the fieldsV1 of u's managed-fields entry for manager
// "pinbot", operation Apply, on the main resource.
func ownedFields(u *unstructured.Unstructured) (*fieldpath.Set, error) {
	for _, e := range u.GetManagedFields() {
		if e.Manager != object.FieldManager || e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" {
			continue
		}
		if e.FieldsV1 == nil {
			return &fieldpath.Set{}, nil
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			return nil, fmt.Errorf("parsing fieldsV1: %w", err)
		}
		return s, nil
	}
	return nil, fmt.Errorf("no managed-fields entry of manager %q", object.FieldManager)
}

// locate finds the value at p in obj and its JSON pointer, resolving
// associative-list keys and set values to the matching item's index.
func locate(obj map[string]any, p fieldpath.Path) (any, string, bool) {
	var cur any = obj
	var ptr strings.Builder
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, "", false
			}
			v, ok := m[*pe.FieldName]
			if !ok {
				return nil, "", false
			}
			ptr.WriteString("/" + ignore.EscapePointer(*pe.FieldName))
			cur = v
		case pe.Key != nil, pe.Value != nil, pe.Index != nil:
			l, ok := cur.([]any)
			if !ok {
				return nil, "", false
			}
			i := itemIndex(l, pe)
			if i < 0 {
				return nil, "", false
			}
			ptr.WriteString("/" + strconv.Itoa(i))
			cur = l[i]
		default:
			return nil, "", false
		}
	}
	return cur, ptr.String(), true
}

// itemIndex finds the list item pe selects, or -1.
func itemIndex(l []any, pe fieldpath.PathElement) int {
	switch {
	case pe.Index != nil:
		if *pe.Index >= 0 && *pe.Index < len(l) {
			return *pe.Index
		}
	case pe.Value != nil:
		want := (*pe.Value).Unstructured()
		for i, item := range l {
			if SameValue(item, want) {
				return i
			}
		}
	case pe.Key != nil:
	items:
		for i, item := range l {
			m, ok := item.(map[string]any)
			if !ok {
				continue
			}
			for _, f := range *pe.Key {
				if v, ok := m[f.Name]; !ok || !SameValue(v, f.Value.Unstructured()) {
					continue items
				}
			}
			return i
		}
	}
	return -1
}

// SameValue compares two decoded JSON values; numbers compare by value
// whatever their Go type.
func SameValue(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// pathString renders p for people: "spec.replicas",
// "spec.template.spec.containers[name=app].image",
// `metadata.labels["app.kubernetes.io/name"]`, "metadata.finalizers[=x]".
func pathString(p fieldpath.Path) string {
	var b strings.Builder
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			n := *pe.FieldName
			if n == "" || strings.ContainsAny(n, ".[]\"/ ") {
				b.WriteString("[" + strconv.Quote(n) + "]")
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(n)
		case pe.Key != nil:
			var kv []string
			for _, f := range *pe.Key {
				kv = append(kv, f.Name+"="+formatValue(f.Value.Unstructured(), true))
			}
			b.WriteString("[" + strings.Join(kv, ",") + "]")
		case pe.Value != nil:
			b.WriteString("[=" + formatValue((*pe.Value).Unstructured(), true) + "]")
		case pe.Index != nil:
			b.WriteString("[" + strconv.Itoa(*pe.Index) + "]")
		}
	}
	return b.String()
}

// formatValue prints a value compactly: scalars as they are (strings
// unquoted unless empty or spaced), maps and lists as JSON, an absent
// value as "<absent>".
func formatValue(v any, present bool) string {
	if !present {
		return "<absent>"
	}
	switch x := v.(type) {
	case string:
		if x == "" || strings.ContainsAny(x, " \t\n\"") {
			return strconv.Quote(x)
		}
		return x
	case nil:
		return "null"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Compare lists the desired (placed) objects that are not in the cluster
// as pinbot last applied them from the same rendered content: missing,
// not labelled for app, or carrying another AnnotationHash (see
// object.AsApplied). None means the cluster holds what Git declares.
//
// Hooks (see hook.Of) are left out: a sync runs them, once per rendered
// content, and between syncs the cluster may hold them completed, deleted
// by their own TTL, or not at all.
//
// This catches every change Git makes. Changes made on the cluster to
// fields Git owns are drift, which Fields detects from a server-side
// apply dry run; Compare deliberately does not read
// live field values.
func Compare(app string, desired []*unstructured.Unstructured, live map[object.Ref]*unstructured.Unstructured) ([]object.Ref, error) {
	var out []object.Ref
	for _, d := range desired {
		if hook.Is(d) {
			continue
		}
		ref := object.RefOf(d)
		l := live[ref]
		if l == nil {
			out = append(out, ref)
			continue
		}
		same, err := object.AsApplied(app, d, l)
		if err != nil {
			return nil, err
		}
		if !same {
			out = append(out, ref)
		}
	}
	return out, nil
}

// Without drops the fields that rules ignore.
func Without(fields []Field, rules []ignore.Rule) []Field {
	if len(rules) == 0 {
		return fields
	}
	out := fields[:0:0]
	for _, d := range fields {
		if !ignore.Matches(rules, d.Object, d.Pointer) {
			out = append(out, d)
		}
	}
	return out
}

// Sort orders fields by object, then path.
func Sort(fields []Field) {
	sort.SliceStable(fields, func(i, j int) bool {
		if fields[i].Object != fields[j].Object {
			return object.Less(fields[i].Object, fields[j].Object)
		}
		return fields[i].Path < fields[j].Path
	})
}

// Same reports whether a and b name the same field with the same values;
// values are decoded JSON or unstructured content, so numbers compare by
// value.
func Same(a, b Field) bool {
	return a.Object == b.Object && a.Path == b.Path && a.Pointer == b.Pointer && a.LiveAbsent == b.LiveAbsent &&
		SameValue(a.Git, b.Git) && SameValue(a.Live, b.Live)
}
