package globs

import "testing"

func TestGlobsOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"envs/**", "envs/prod/**", true},
		{"envs/staging/**", "envs/prod/**", false},
		{"envs/*/web.yaml", "envs/prod/**", true},
		{"envs/*.yaml", "envs/prod/**", false},
		{"**/values.yaml", "charts/prod/values.yaml", true},
		{"**", "anything/at/all", true},
		{"envs/staging-*", "envs/prod-*", false},
		{"envs/*.yaml", "envs/*.json", false},
		{"envs/web-*.yaml", "envs/*-prod.yaml", true},
		{"a/b", "a/b/c", false},
		{"a/**", "a", true},
	} {
		if got := Overlap(tc.a, tc.b); got != tc.want {
			t.Errorf("Overlap(%q, %q) = %t, want %t", tc.a, tc.b, got, tc.want)
		}
		if got := Overlap(tc.b, tc.a); got != tc.want {
			t.Errorf("Overlap(%q, %q) = %t, want %t", tc.b, tc.a, got, tc.want)
		}
	}
}
