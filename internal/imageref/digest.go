package imageref

import (
	"errors"
	"fmt"
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
		return fmt.Errorf("digest %q: %w", d, ErrInvalidDigest)
	}
	return nil
}

// shortHex is how many hex digits [Short] keeps.
const shortHex = 12

// Short abbreviates "sha256:<64 hex>" to "sha256:" and its first 12 hex
// digits, the form pinbot shows people (titles, tables, logs). Anything
// that is not longer than that is returned as is.
func Short(d string) string {
	if len(d) > len("sha256:")+shortHex {
		return d[:len("sha256:")+shortHex]
	}
	return d
}
