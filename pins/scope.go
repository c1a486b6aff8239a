package pins

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"pinbot.dev/pinbot/internal/imageref"
)

// variantName describes a tag's variant for people.
func variantName(tag string) string {
	v, ok := imageref.Variant(tag)
	switch {
	case !ok:
		return fmt.Sprintf("%q (not a version)", tag)
	case v == "":
		return "without suffix"
	}
	return "-" + v
}

// Skip is a pin (or, under PinTags, a tag reference) of the repository
// being set that the set left alone because its tag is outside its scope.
type Skip struct {
	File   string // slash path relative to the directory
	Line   int    // 1-based line of the digest, or of where one would go
	Tag    string
	Reason string
}

// scope decides whether a set naming tag named ("" for none) may change a
// pin of its repository whose tag is tag ("" for none): pinned says it
// holds a digest, and is false for a tag reference under PinTags. The
// rules, which Decide documents, in one place:
func scope(named, tag string, pinned bool) (ok bool, reason string) {
	switch {
	case !pinned && named == "":
		return false, "a tag reference is pinned only when the set names its tag, and it names none"
	case !pinned && tag != named:
		return false, fmt.Sprintf("a tag reference is pinned only to its own tag's digest, and the set's tag is %s", named)
	case !pinned, tag == "", named == "", imageref.SameVariant(tag, named):
		return true, ""
	}
	return false, fmt.Sprintf("variant %s differs from the set's tag %s (variant %s)", variantName(tag), named, variantName(named))
}

// ErrMixedVariants refuses a set that names no tag when the pins it would
// change carry more than one tag variant: one digest belongs to one variant.
var ErrMixedVariants = errors.New("the pins carry more than one tag variant, and one digest belongs to one: name the tag, or allow every variant")

// mixedVariants returns ErrMixedVariants, naming each variant and its first
// pin, when the tagged pins in scope of a set naming no tag carry more than
// one variant. in lists them in file and line order.
func mixedVariants(repo string, in []Pin) error {
	type seen struct {
		name, at string
	}
	var vs []seen
	for _, p := range in {
		if p.Tag == "" {
			continue
		}
		name := variantName(p.Tag)
		if !slices.ContainsFunc(vs, func(s seen) bool { return s.name == name }) {
			vs = append(vs, seen{name: name, at: fmt.Sprintf("%s:%d", p.File, p.Line)})
		}
	}
	if len(vs) < 2 {
		return nil
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.name + " at " + v.at
	}
	return fmt.Errorf("setting %s: %d variants (%s): %w", repo, len(vs), strings.Join(parts, "; "), ErrMixedVariants)
}

// Decide sorts the pins of u.Image that a Set of u would consider (as Scan
// lists them, plus under PinTags the tag references, with an empty Digest;
// ignored pins are left out) into those in its scope and those it skips:
//
//   - When u names a tag, a pin is in scope only if its tag is of the same
//     variant (see Variant): "3.14.6-slim" and "3.14.6-alpine" differ, "v1"
//     and "v2" do not. A digest-only pin is in scope.
//   - Under PinTags, a tag reference is pinned only when its tag is u's
//     tag; its tag never changes.
//   - When u names no tag and the tagged pins in scope carry more than one
//     variant, the set is refused with ErrMixedVariants, naming the
//     variants, unless u.AnyVariant.
//
// Set and Plan decide each pin by these rules and report the skipped ones
// (see WithSkipped); Decide is the same decision over a list, for callers
// that hold one, such as promote. It does no I/O.
func Decide(u Update, found []Pin) (in []Pin, skipped []Skip, err error) {
	up, err := prepare(u)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range found {
		if !p.Of(up.repo) || p.Ignored || p.Digest == "" && !u.PinTags {
			continue
		}
		if ok, reason := scope(u.Tag, p.Tag, p.Digest != ""); !ok {
			skipped = append(skipped, Skip{File: p.File, Line: p.Line, Tag: p.Tag, Reason: reason})
			continue
		}
		in = append(in, p)
	}
	if u.Tag == "" && !u.AnyVariant {
		if err := mixedVariants(up.repo, in); err != nil {
			return nil, nil, err
		}
	}
	return in, skipped, nil
}
