package dashboard

import (
	"regexp"
	"strings"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/release"
)

// versions are the tags l's tracks know digests by, by the short digest
// the pages show.
func versions(l *release.Ledger) map[string]string {
	out := map[string]string{}
	add := func(d, tag string) {
		if d != "" && tag != "" {
			out[imageref.Short(d)] = tag
		}
	}
	for _, env := range l.Envs {
		for _, t := range env {
			add(t.PrevProven, t.PrevProvenTag)
			add(t.LastProven, t.LastProvenTag)
			add(t.Pinned, t.PinnedTag)
		}
	}
	return out
}

// shortDigests are the digests a decision's text names, as pages show
// them.
var shortDigests = regexp.MustCompile(`sha256:[0-9a-f]{12}\b`)

// withVersions names each digest of s that tags knows by its version
// too: "v3 (sha256:abc…)", as everywhere else on the page.
func withVersions(s string, tags map[string]string) string {
	return shortDigests.ReplaceAllStringFunc(s, func(d string) string {
		if tag := tags[d]; tag != "" && !strings.Contains(s, tag+" ("+d) {
			return tag + " (" + d + ")"
		}
		return d
	})
}

// tagOf is the tag t knows digest by, "" for none.
func tagOf(t *release.Track, digest string) string {
	switch {
	case t == nil || digest == "":
		return ""
	case digest == t.Pinned:
		return t.PinnedTag
	case digest == t.LastProven:
		return t.LastProvenTag
	case digest == t.PrevProven:
		return t.PrevProvenTag
	}
	return ""
}
