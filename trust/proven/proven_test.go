package proven

import (
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	const index, child, other = "sha256:1111", "sha256:2222", "sha256:3333"
	p := Predicate{Environment: "staging", Digest: index, ProvenFor: Duration(2 * time.Hour),
		Pods:       []Pod{{Namespace: "staging", Name: "web-1", Container: "app", Running: child}},
		AttestedAt: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)}
	for _, tc := range []struct {
		name string
		want Want
		why  string // "" passes
	}{
		{"the index it pins", Want{Env: "staging", Digest: index, MinSoak: time.Hour}, ""},
		{"the platform child that ran", Want{Env: "staging", Digest: child}, ""},
		{"another digest", Want{Env: "staging", Digest: other}, "it is about sha256:1111, not sha256:3333"},
		{"another environment", Want{Env: "prod", Digest: index}, "proven in staging, not prod"},
		{"too short", Want{Env: "staging", Digest: index, MinSoak: 24 * time.Hour}, "proven in staging for 2h0m0s (attested at 2026-12-05T10:00:00Z), less than 24h0m0s"},
	} {
		err := p.Check(tc.want)
		if (err == nil) != (tc.why == "") || err != nil && !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: Check = %v, want %q", tc.name, err, tc.why)
		}
	}
}
