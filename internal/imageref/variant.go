package imageref

import "strings"

// Variant returns a tag's variant, as Renovate's docker versioning reads
// it. A version tag is an optional "v", dot-separated numbers and optional
// letters or digits ("1.27", "v2", "3.14.6rc1"), then optionally "-" and a
// suffix; its variant is the suffix: "slim" for "3.14.6-slim", "" for "v2".
// A tag that is not a version ("latest", "main", a commit hash) has no
// variant: ok is false, and only the same tag is of its kind.
func Variant(tag string) (variant string, ok bool) {
	if isCommitHash(tag) {
		return "", false
	}
	v := strings.TrimPrefix(tag, "v")
	prefix, suffix, _ := strings.Cut(v, "-")
	// prefix: \d+(\.\d+)*\w*
	i, start := 0, 0
	for {
		start = i
		for i < len(prefix) && '0' <= prefix[i] && prefix[i] <= '9' {
			i++
		}
		if i == start {
			return "", false
		}
		if i+1 < len(prefix) && prefix[i] == '.' && '0' <= prefix[i+1] && prefix[i+1] <= '9' {
			i++
			continue
		}
		break
	}
	for ; i < len(prefix); i++ {
		if c := prefix[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return "", false
		}
	}
	return suffix, true
}

// isCommitHash reports 7 to 40 lowercase hex digits that are not all
// digits, which Renovate reads as a commit, not a version.
func isCommitHash(t string) bool {
	if len(t) < 7 || len(t) > 40 {
		return false
	}
	digits := true
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case '0' <= c && c <= '9':
		case 'a' <= c && c <= 'f':
			digits = false
		default:
			return false
		}
	}
	return !digits
}

// SameVariant reports whether two tags are of one variant: two versions
// with the same suffix, or the same tag.
func SameVariant(a, b string) bool {
	va, oka := Variant(a)
	vb, okb := Variant(b)
	if oka && okb {
		return va == vb
	}
	return a == b
}
