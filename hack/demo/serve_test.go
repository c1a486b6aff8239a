package main

import "testing"

func TestSkipServe(t *testing.T) {
	for _, tc := range []struct {
		env  string
		args []string
		want bool
	}{
		{"", nil, false},
		{"1", nil, false},
		{"0", nil, true},
		{"", []string{"--no-serve"}, true},
		{"", []string{"--serve"}, false},
	} {
		if got := skipServe(tc.env, tc.args); got != tc.want {
			t.Errorf("skipServe(%q, %q) = %v, want %v", tc.env, tc.args, got, tc.want)
		}
	}
}
