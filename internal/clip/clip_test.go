package clip

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"short", "nginx", `"nginx"`},
		{"exactly max", strings.Repeat("a", Max), `"` + strings.Repeat("a", Max) + `"`},
		{"long", strings.Repeat("a", 5<<20), `"` + strings.Repeat("a", Max) + `"... (5242880 bytes)`},
		{"cut before a multi-byte rune", strings.Repeat("a", Max-1) + "é" + "tail", `"` + strings.Repeat("a", Max-1) + `"... (85 bytes)`},
		{"control characters", "a\nb", `"a\nb"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Quote(tc.in)); diff != "" {
				t.Errorf("Quote (-want +got):\n%s", diff)
			}
		})
	}
}

func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"deploy/app.yaml":      "deploy/app.yaml",
		"déploiement/app.yaml": "déploiement/app.yaml",
		"a\nb.yaml":            `"a\nb.yaml"`,
		"\x1b[2Jclear.yaml":    `"\x1b[2Jclear.yaml"`,
		"quote\".yaml":         `"quote\".yaml"`,
		"bad\xffutf8.yaml":     `"bad\xffutf8.yaml"`,
		"zero\u200bwidth.yaml": `"zero\u200bwidth.yaml"`,
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %s, want %s", in, got, want)
		}
	}
}
