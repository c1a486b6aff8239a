package gitforge_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"pinbot.dev/pinbot/gitforge"
)

// TestClipDescription: a long commit status description is cut at a word
// boundary within Gitea's bound, never inside a word or a UTF-8
// character, and says it was cut; a short one is left whole.
func TestClipDescription(t *testing.T) {
	refusal := "refused sha256:0b7e1c: rule gitea.example/platform/** wants a signature by keys/cosign.pub; " +
		strings.Repeat("the linux/arm64 child is unsigned, ", 8) + "and the index too"
	for _, tc := range []struct {
		name, in string
	}{
		{"words", refusal},
		{"multi-byte", strings.Repeat("ü", 200)},
		{"one long word", strings.Repeat("x", 400)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := gitforge.ClipDescription(tc.in)
			if len(got) > gitforge.MaxDescription || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
				t.Fatalf("ClipDescription = %q (%d bytes), want at most %d valid bytes ending in …", got, len(got), gitforge.MaxDescription)
			}
			kept := strings.TrimSuffix(got, "…")
			if !strings.HasPrefix(tc.in, kept) {
				t.Errorf("%q is not a prefix of the input", kept)
			}
			if tc.name == "words" && !strings.HasPrefix(tc.in[len(kept):], " ") && !strings.HasPrefix(tc.in[len(kept):], ",") {
				t.Errorf("cut inside a word: %q|%q", kept[len(kept)-10:], tc.in[len(kept):len(kept)+10])
			}
		})
	}
	if short := "2/2 Pods run sha256:0b7e1c…"; gitforge.ClipDescription(short) != short {
		t.Errorf("a short description was changed: %q", gitforge.ClipDescription(short))
	}
}
