package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/invopop/jsonschema"
)

// Markdown is the reference page of schema s: a section per type, in the
// order a reader meets them from the top of the file, each a table of
// its keys with their shape and what they mean, from the Go types' doc
// comments.
func Markdown(s *jsonschema.Schema, title, intro string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n<!-- Generated from the config types by `make schemas`; do not edit. -->\n\n%s\n", title, intro)
	fmt.Fprintf(&b, "Editors check the file with its JSON Schema, [%s](%s).\n", schemaFile(s), schemaFile(s))
	seen := map[string]bool{}
	queue := []string{defName(s.Ref)}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		def := s.Definitions[name]
		if def == nil {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n\n", name)
		if d := describe(def.Description); d != "" {
			fmt.Fprintf(&b, "%s\n\n", d)
		}
		if def.Properties == nil || def.Properties.Len() == 0 {
			fmt.Fprintf(&b, "A %s.\n", shape(def))
			queue = append(queue, refs(def)...)
			continue
		}
		b.WriteString("| key | shape | meaning |\n|---|---|---|\n")
		for p := def.Properties.Oldest(); p != nil; p = p.Next() {
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", p.Key, shape(p.Value), cell(describe(p.Value.Description)))
			queue = append(queue, refs(p.Value)...)
		}
	}
	return []byte(b.String())
}

func schemaFile(s *jsonschema.Schema) string {
	return s.ID.String()[strings.LastIndex(s.ID.String(), "/")+1:]
}

func defName(ref string) string { return strings.TrimPrefix(ref, "#/$defs/") }

// anchor is the heading anchor of a definition, as Markdown renderers
// make it: lower case, the dot dropped.
func anchor(name string) string { return strings.ToLower(strings.ReplaceAll(name, ".", "")) }

// shape is a property's type in words: a link to its section, a list or
// map of something, a duration.
func shape(s *jsonschema.Schema) string {
	switch {
	case s == nil:
		return "any"
	case s.Ref != "":
		n := defName(s.Ref)
		return fmt.Sprintf("[%s](#%s)", n, anchor(n))
	case len(s.OneOf) > 0 || len(s.AnyOf) > 0:
		var alts []string
		for _, a := range append(s.OneOf, s.AnyOf...) {
			alts = append(alts, shape(a))
		}
		return strings.Join(alts, " or ")
	case len(s.Enum) > 0:
		var vals []string
		for _, v := range s.Enum {
			vals = append(vals, fmt.Sprintf("`%v`", v))
		}
		return "one of " + strings.Join(vals, ", ")
	case s.Type == "array":
		return "list of " + shape(s.Items)
	case s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties != jsonschema.FalseSchema:
		return "map of string to " + shape(s.AdditionalProperties)
	case s.Type == "string" && strings.Contains(s.Pattern, "ns|us"):
		return "duration"
	case s.Type == "":
		return "any"
	}
	return s.Type
}

// refs are the definitions s names, in order.
func refs(s *jsonschema.Schema) []string {
	if s == nil {
		return nil
	}
	var out []string
	if s.Ref != "" {
		out = append(out, defName(s.Ref))
	}
	for _, a := range append(append([]*jsonschema.Schema{s.Items, s.AdditionalProperties}, s.OneOf...), s.AnyOf...) {
		out = append(out, refs(a)...)
	}
	return out
}

// internalRef is a mention of pinbot's issues or tests in a comment,
// which a user's page leaves out.
var internalRef = regexp.MustCompile(`\s*\(see package [a-z/]+\)|\s*\((?:see )?issue \d+[^)]*\)|\s*\(see [A-Z][A-Za-z]*Test[^)]*\)`)

// describe is a doc comment as one paragraph: its own lines joined, an
// example block left out.
func describe(doc string) string {
	var kept []string
	for _, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "  ") {
			continue // an indented example
		}
		kept = append(kept, strings.TrimSpace(l))
	}
	return strings.TrimSpace(internalRef.ReplaceAllString(strings.Join(kept, " "), ""))
}

// cell escapes text for a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
