// Package clip bounds untrusted values before they are echoed in an error
// or a log line: a 5 MB line in an input file must give a short message,
// not a 5 MB one.
package clip

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Max is how many bytes of a value Quote keeps.
const Max = 80

// Quote returns s quoted as %q would, cut to its first Max bytes (never
// inside a UTF-8 sequence) and, when cut, followed by how long it was:
// "aaaa…"… (5000000 bytes).
func Quote(s string) string {
	if len(s) <= Max {
		return strconv.Quote(s)
	}
	cut := Max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:cut]), len(s))
}
