package registry

import (
	"strings"
	"testing"
	"time"
)

// TestNewRejectsBadOptions checks that New reports a bad option itself,
// naming it, rather than handing out a Client that fails every call.
func TestNewRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want string // in the error; "" for no error
	}{
		{name: "defaults"},
		{name: "insecure host and host:port", opts: []Option{WithInsecure("reg.internal", "reg.internal:5000", "[fd00::1]:5000")}},
		{name: "no retries", opts: []Option{WithRetry(0)}},
		{name: "zero concurrency", opts: []Option{WithConcurrency(0)}, want: "WithConcurrency(0)"},
		{name: "negative retry", opts: []Option{WithRetry(-time.Second)}, want: "WithRetry(-1s)"},
		{name: "nil keychain", opts: []Option{WithKeychain(nil)}, want: "WithKeychain(nil)"},
		{name: "insecure URL", opts: []Option{WithInsecure("http://reg.internal")}, want: `WithInsecure("http://reg.internal")`},
		{name: "insecure empty", opts: []Option{WithInsecure("")}, want: `WithInsecure("")`},
		{name: "basic auth without host", opts: []Option{WithBasicAuth(" ", "u", "p-for-test")}, want: "WithBasicAuth: empty registry host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.opts...)
			if tc.want == "" {
				if err != nil || c == nil {
					t.Fatalf("New = %v, %v; want a Client", c, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v; want an error naming %s", err, tc.want)
			}
			if c != nil {
				t.Errorf("New returned a Client with its error")
			}
		})
	}
}
