// Package clip bounds untrusted values before they are echoed in an error
// or a log line: a 5 MB line in an input file must give a short message,
// not a 5 MB one.
package clip

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Max is how many bytes of a value Quote keeps.
const Max = 80

// MaxRef is how many bytes of an image reference or digest QuoteRef
// keeps: the longest valid reference (a 255-byte name, a 128-byte tag and
// a digest) fits.
const MaxRef = 512

// Quote returns s quoted as %q would, cut to its first Max bytes (never
// inside a UTF-8 sequence) and, when cut, followed by how long it was:
// "aaaa…"… (5000000 bytes).
func Quote(s string) string { return quote(s, Max) }

// QuoteRef is Quote for an image reference, a repository or a digest,
// which it keeps whole up to MaxRef bytes.
func QuoteRef(s string) string { return quote(s, MaxRef) }

func quote(s string, max int) string {
	if len(s) <= max {
		return strconv.Quote(s)
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// Name returns a file name as it is safe to print on a terminal: as it is
// when it holds only printable characters other than quotes and
// backslashes, else quoted as %q would, so that a repository's file named
// with a line break or an escape sequence cannot forge or hide output.
func Name(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '"' || c == '\\' || c >= 0x80 {
			if c < 0x80 || !utf8.ValidString(s) || !printable(s) {
				return strconv.Quote(s)
			}
		}
	}
	return s
}

func printable(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// MaxError is how many bytes of an error's message Error keeps.
const MaxError = 240

// Error returns err with its message cut as Quote cuts a value (to
// MaxError bytes, saying how long it was), for an error that a library
// made by echoing its input whole; errors.Is and errors.As still see err.
func Error(err error) error {
	if err == nil || len(err.Error()) <= MaxError {
		return err
	}
	return clipped{err}
}

type clipped struct{ err error }

func (c clipped) Error() string {
	s := c.err.Error()
	cut := MaxError
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:cut], len(s))
}

func (c clipped) Unwrap() error { return c.err }
