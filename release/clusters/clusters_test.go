package clusters

import (
	"strings"
	"testing"
)

// TestShareOf: a count, or a percentage of the clusters rounded down;
// anything else, or over 100%, is an error.
func TestShareOf(t *testing.T) {
	for _, tc := range []struct {
		s    Share
		n    int
		want int
		err  string
	}{
		{"", 4, 0, ""}, {"1", 4, 1, ""}, {"25%", 4, 1, ""}, {"25%", 3, 0, ""}, {"100%", 3, 3, ""},
		{"101%", 3, 0, `"101%": over 100%`}, {"-1", 3, 0, `"-1": want a count`}, {"1.5", 3, 0, `"1.5": want a count`}, {"a%", 3, 0, `"a%": want a count`},
	} {
		got, err := tc.s.Of(tc.n)
		if got != tc.want || (tc.err != "") != (err != nil) || err != nil && !strings.HasPrefix(err.Error(), tc.err) {
			t.Errorf("Share(%q).Of(%d) = %d, %v; want %d, %q", tc.s, tc.n, got, err, tc.want, tc.err)
		}
	}
}
