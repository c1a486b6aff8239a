package imageref_test

import (
	"testing"

	"pinbot.dev/pinbot/internal/imageref"
)

func TestVariant(t *testing.T) {
	tests := []struct {
		tag     string
		variant string
		ok      bool
	}{
		{"1.27", "", true},
		{"v2", "", true},
		{"3.14.6-slim", "slim", true},
		{"3.14.6-alpine", "alpine", true},
		{"3.14-slim-bookworm", "slim-bookworm", true},
		{"3.14.6rc1", "", true},
		{"v1.2.3-debug", "debug", true},
		{"20.04", "", true},
		{"1234567", "", true}, // all digits: a version, not a commit
		{"latest", "", false},
		{"stable-alpine", "", false},
		{"abc1234", "", false}, // a commit hash
		{"1.2.", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.tag, func(t *testing.T) {
			v, ok := imageref.Variant(tc.tag)
			if v != tc.variant || ok != tc.ok {
				t.Errorf("Variant(%q) = %q, %v; want %q, %v", tc.tag, v, ok, tc.variant, tc.ok)
			}
		})
	}
}
