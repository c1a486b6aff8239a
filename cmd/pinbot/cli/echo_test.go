package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/cmd/pinbot/internal/output"
	"pinbot.dev/pinbot/pins"
	"pinbot.dev/pinbot/release"
)

// TestLongValuesAreClipped: a 6 KB reference given to resolve, promote's
// --image or pins set is echoed clipped, saying how long it was, never
// whole.
func TestLongValuesAreClipped(t *testing.T) {
	long := "r.example/app:" + strings.Repeat("a", 6000)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"resolve", long},
		{"resolve", "r.example/app@sha256:" + strings.Repeat("a", 6000)},
		{"promote", "--forge-url", "http://127.0.0.1:1", "--repo", "o/r", "--image", long, "--dry-run"},
		{"pins", "set", long + "@sha256:" + strings.Repeat("a", 64), "--dir", dir},
	} {
		t.Run(args[0], func(t *testing.T) {
			code, _, stderr := run(t, args...)
			if code == 0 {
				t.Fatalf("exit 0 for %s", args[0])
			}
			if len(stderr) > 1500 || !strings.Contains(stderr, "bytes)") {
				t.Errorf("stderr of %d bytes, want a clipped value saying its length: %.300s", len(stderr), stderr)
			}
		})
	}
}

// TestJSONErrorNamesTheFile: under -o json, a failed write names its file
// as a syntax error does.
func TestJSONErrorNamesTheFile(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&pins.WriteError{Op: "replacing", File: "envs/prod/values.yaml", Err: errors.New("read-only file system")}, `"file":"envs/prod/values.yaml"`},
		{fmt.Errorf("wrapped: %w", &fs.PathError{Op: "open", Path: "/out/digest", Err: fs.ErrNotExist}), `"file":"/out/digest"`},
		{&pins.SyntaxError{File: "a.yaml", Line: 3, Err: errors.New("bad")}, `"file":"a.yaml","line":3`},
	} {
		var b strings.Builder
		output.Error(&b, tc.err)
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("output.Error(%v) = %s, want %s", tc.err, b.String(), tc.want)
		}
	}
}

// TestJSONErrorCarriesTheGatesRefusal: -o json carries a refusal of the
// release chain as fields.
func TestJSONErrorCarriesTheGatesRefusal(t *testing.T) {
	since := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	err := fmt.Errorf("promoting r.example/web into prod: %w", &release.Refusal{Rule: release.RuleHeld, Env: "prod", Image: "r.example/web",
		Digest: "sha256:" + strings.Repeat("b", 64), Since: &since, Detail: "crash loop"})
	var b strings.Builder
	output.Error(&b, err)
	if want := `"gate":{"rule":"held","env":"prod","image":"r.example/web","digest":"sha256:` + strings.Repeat("b", 64) + `","since":"2026-12-02T12:00:00Z","detail":"crash loop"}`; !strings.Contains(b.String(), want) {
		t.Errorf("got %s\nwant it to hold %s", b.String(), want)
	}
}
