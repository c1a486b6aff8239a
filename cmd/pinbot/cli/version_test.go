package cli

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"pinbot.dev/pinbot/internal/buildinfo"
)

func TestVersion(t *testing.T) {
	defer func(v, c, d string) { buildinfo.Version, buildinfo.Commit, buildinfo.BuildDate = v, c, d }(buildinfo.Version, buildinfo.Commit, buildinfo.BuildDate)
	buildinfo.Version, buildinfo.Commit, buildinfo.BuildDate = "v1.2.3", "0123456789abcdef0123456789abcdef01234567", "2026-12-01T10:00:00Z"
	platform := runtime.GOOS + "/" + runtime.GOARCH

	code, out, stderr := run(t, "version")
	want := "pinbot v1.2.3\n  commit:   0123456789abcdef0123456789abcdef01234567\n  built:    2026-12-01T10:00:00Z\n  go:       " + runtime.Version() + "\n  platform: " + platform + "\n"
	if code != exitOK || out != want {
		t.Errorf("version: exit %d, stdout %q, stderr %q; want %q", code, out, stderr, want)
	}

	code, out, _ = run(t, "version", "-o", "json")
	var got map[string]string
	if err := json.Unmarshal([]byte(out), &got); code != exitOK || err != nil {
		t.Fatalf("version -o json: exit %d, %q: %v", code, out, err)
	}
	wantJSON := map[string]string{"version": "v1.2.3", "commit": buildinfo.Commit, "buildDate": buildinfo.BuildDate, "goVersion": runtime.Version(), "platform": platform}
	for k, v := range wantJSON {
		if got[k] != v {
			t.Errorf("version -o json: %s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if len(got) != len(wantJSON) || strings.Count(out, "\n") != 1 {
		t.Errorf("version -o json = %q, want one object of %d keys", out, len(wantJSON))
	}
}

// -o yaml prints what -o json prints, as YAML with the same field names;
// a stream of JSON documents becomes YAML documents separated by "---".
func TestOutputYAML(t *testing.T) {
	defer func(v, c, d string) { buildinfo.Version, buildinfo.Commit, buildinfo.BuildDate = v, c, d }(buildinfo.Version, buildinfo.Commit, buildinfo.BuildDate)
	buildinfo.Version, buildinfo.Commit, buildinfo.BuildDate = "v1.2.3", "abc", "2026-12-01T10:00:00Z"
	code, out, _ := run(t, "version", "-o", "yaml")
	want := "buildDate: \"2026-12-01T10:00:00Z\"\ncommit: abc\ngoVersion: " + runtime.Version() + "\nplatform: " + runtime.GOOS + "/" + runtime.GOARCH + "\nversion: v1.2.3\n"
	if code != exitOK || out != want {
		t.Errorf("version -o yaml: exit %d, %q; want %q", code, out, want)
	}
	code, out, _ = run(t, "status", "--config", "/nonexistent/pinbot.yaml", "-o", "yaml")
	if code != exitError || !strings.HasPrefix(out, "error: ") || !strings.Contains(out, "\nline: 0\n") {
		t.Errorf("a failed command under -o yaml: exit %d, stdout %q; want its error as YAML", code, out)
	}

}

func TestLogFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"version", "--log-format", "xml"}, "flag --log-format: want text or json"},
		{[]string{"version", "--log-level", "loud"}, "flag --log-level: want debug, info, warn or error"},
	} {
		code, _, stderr := run(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
	var buf bytes.Buffer
	g := &globals{logFormat: "json", logLevel: "warn"}
	log := g.logger(&buf)
	log.Info("not shown")
	log.Warn("shown", "app", "web")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil || rec["msg"] != "shown" || rec["app"] != "web" || rec["level"] != "WARN" {
		t.Errorf("JSON log at warn: %q (%v)", buf.String(), err)
	}
}
