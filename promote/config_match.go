package promote

import (
	"fmt"
	"path"
	"strings"

	"pinbot.dev/pinbot/internal/clip"
)

// TargetOf returns the name of the first target whose paths match file (a
// slash path relative to the repository root), or "" when none does.
func (c Config) TargetOf(file string) string {
	for _, t := range c.Targets {
		if matchAny(t.Paths, file) {
			return t.Name
		}
	}
	return ""
}

// TrackedTag returns the tag a digest-only pin of image in file follows
// according to the track entries, or "".
func (c Config) TrackedTag(image, file string) string {
	for _, tr := range c.Track {
		if tr.Image == image && (len(tr.Paths) == 0 || matchAny(tr.Paths, file)) {
			return tr.Tag
		}
	}
	return ""
}

func validBranchPrefix(p string) bool {
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, ".") || strings.HasPrefix(p, "-") ||
		strings.Contains(p, "..") || strings.Contains(p, "//") || strings.ContainsAny(p, " ~^:?*[\\\t\n") ||
		strings.Contains(p, "@{") || strings.Contains(p, ".lock/") {
		return false
	}
	return true
}

// checkGlob validates a path glob: slash-separated segments, each a
// path.Match pattern or "**".
func checkGlob(pattern string) error {
	if pattern == "" || strings.HasPrefix(pattern, "/") {
		return fmt.Errorf("path glob %s: want a non-empty path relative to the repository root", clip.Quote(pattern))
	}
	for _, seg := range strings.Split(pattern, "/") {
		if seg == "**" {
			continue
		}
		if seg == ".." || seg == "." || strings.Contains(seg, "\\") {
			return fmt.Errorf("path glob %s: want a path inside the repository, without . or .. segments or backslashes", clip.Quote(pattern))
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("path glob %s: %w", clip.Quote(pattern), err)
		}
	}
	return nil
}

func matchAny(patterns []string, file string) bool {
	for _, p := range patterns {
		if matchGlob(p, file) {
			return true
		}
	}
	return false
}

// matchGlob matches a slash path against a glob whose "**" segments match
// any number of path segments (including none).
func matchGlob(pattern, file string) bool {
	return matchSegments(strings.Split(pattern, "/"), strings.Split(file, "/"))
}

func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range segs {
				if matchSegments(pat, segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}
