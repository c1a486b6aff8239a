package release

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
		if got := globsOverlap(tc.a, tc.b); got != tc.want {
			t.Errorf("globsOverlap(%q, %q) = %t, want %t", tc.a, tc.b, got, tc.want)
		}
		if got := globsOverlap(tc.b, tc.a); got != tc.want {
			t.Errorf("globsOverlap(%q, %q) = %t, want %t", tc.b, tc.a, got, tc.want)
		}
	}
}

// TestValidateRefusesOverlappingPaths: a staging promotion must not
// rewrite prod's files, so no file may belong to two environments.
func TestValidateRefusesOverlappingPaths(t *testing.T) {
	c := Chain{
		{Name: "staging", Paths: []string{"envs/**"}, Apps: []string{"web-staging"}},
		{Name: "prod", From: "staging", Paths: []string{"envs/prod/**"}, Apps: []string{"web-prod"}},
	}
	probs := c.Validate(func(string) bool { return true }, func(string) error { return nil })
	if len(probs) != 1 || probs[0].Key != "paths" || probs[0].Msg != `environment "prod"'s path "envs/prod/**" overlaps environment "staging"'s "envs/**": a file may belong to one environment only` {
		t.Errorf("problems %+v, want the overlap named", probs)
	}
}
