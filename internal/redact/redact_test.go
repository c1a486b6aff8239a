package redact

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	Register("s3cr3t-token-value")
	for _, tc := range []struct{ name, in, want string }{
		{"registered", "auth failed for s3cr3t-token-value", "auth failed for REDACTED"},
		{"url userinfo", "clone https://bot:hunter22@gitea.local/o/r.git: 401", "clone https://REDACTED@gitea.local/o/r.git: 401"},
		{"bearer", "Authorization: Bearer abcdef123456", "Authorization: Bearer REDACTED"},
		{"query", "GET /x?access_token=abcdef123456&y=1", "GET /x?access_token=REDACTED&y=1"},
		{"plain", "nothing secret here", "nothing secret here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := String(tc.in); got != tc.want {
				t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestError(t *testing.T) {
	Register("another-secret-1")
	sentinel := errors.New("boom")
	err := Error(fmt.Errorf("token another-secret-1: %w", sentinel))
	if strings.Contains(err.Error(), "another-secret-1") {
		t.Errorf("secret survived: %s", err)
	}
	if !errors.Is(err, sentinel) {
		t.Error("errors.Is lost the chain")
	}
}

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://u:p@h.example/o/r.git":        "https://h.example/o/r.git",
		"https://u:pa ss%zz@h.example:99999/x": "https://REDACTED@h.example:99999/x", // does not parse
		"https://h.example/o/r.git":            "https://h.example/o/r.git",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestShortSecret: a secret of any length is redacted, a short one where
// it stands as a word, not inside other words.
func TestShortSecret(t *testing.T) {
	Register("q7")
	if got, want := String("token q7 rejected; q7x and xq7 stay"), "token REDACTED rejected; q7x and xq7 stay"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}
