package output

import (
	"io"
	"strings"
	"testing"
)

// TestWriterToYAML: each JSON document written becomes a YAML document,
// numbers keep their digits, and what is not JSON passes through.
func TestWriterToYAML(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b)
	w.ToYAML()
	in := `{"app":"web","pods":1}` + "\n" + `{"app":"api","pods":12345678901234567890}` + "\nnot json\n"
	if _, err := io.WriteString(w, in); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if got, want := b.String(), "app: web\npods: 1\n---\napp: api\npods: 12345678901234567890\nnot json\n"; got != want {
		t.Errorf("converted stream = %q, want %q", got, want)
	}
}
