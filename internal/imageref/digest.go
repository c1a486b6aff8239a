package imageref

import (
	"errors"
	"fmt"
	"strings"

	"pinbot.dev/pinbot/internal/clip"
)

// DigestLen is the length of a valid digest: len("sha256:") + 64.
const DigestLen = 71

// ErrInvalidDigest reports a digest that is not "sha256:" followed by 64
// lowercase hex digits.
var ErrInvalidDigest = errors.New("invalid digest: want sha256: and 64 lowercase hex digits")

// ValidDigest reports whether d is "sha256:" and 64 lowercase hex digits.
// It does not allocate.
func ValidDigest(d string) bool {
	if len(d) != DigestLen || d[:7] != "sha256:" {
		return false
	}
	ok := true
	for i := 7; i < len(d); i++ {
		ok = ok && lowerHex[d[i]]
	}
	return ok
}

var lowerHex = [256]bool{'0': true, '1': true, '2': true, '3': true, '4': true, '5': true, '6': true, '7': true,
	'8': true, '9': true, 'a': true, 'b': true, 'c': true, 'd': true, 'e': true, 'f': true}

// CheckDigest returns an error wrapping [ErrInvalidDigest] and naming d,
// unless d is valid.
func CheckDigest(d string) error {
	if !ValidDigest(d) {
		return fmt.Errorf("digest %s: %w", clip.QuoteRef(d), ErrInvalidDigest)
	}
	return nil
}

// shortHex is how many hex digits [Short] keeps.
const shortHex = 12

// Short abbreviates a digest to "sha256:" and its first 12 hex digits,
// the form pinbot shows people (titles, tables, logs). A reference or an
// image ID that ends in a digest ("repo@sha256:…",
// "docker-pullable://repo@sha256:…") is shortened to its digest. Anything
// no longer than that is returned as is.
func Short(d string) string {
	i := strings.LastIndex(d, "sha256:")
	if i < 0 || len(d) <= i+len("sha256:")+shortHex {
		return d
	}
	return d[i : i+len("sha256:")+shortHex]
}

// Abbrev is Short with an ellipsis that says the digest was cut:
// "sha256:<12 hex>…", for commit statuses and one-line summaries.
func Abbrev(d string) string {
	if s := Short(d); s != d {
		return s + "…"
	}
	return d
}
