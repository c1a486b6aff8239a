package loopback

import (
	"net/url"
	"testing"
)

func TestHostAndCleartext(t *testing.T) {
	for _, tc := range []struct {
		url       string
		cleartext bool
	}{
		{"http://127.0.0.1:3000", false},
		{"http://127.1.2.3", false},
		{"http://localhost:3000", false},
		{"http://LocalHost", false},
		{"http://[::1]:3000", false},
		{"https://gitea.example", false},
		{"HTTP://gitea.example", true},
		{"http://gitea.example", true},
		{"http://192.0.2.2:3000", true},
		{"http://localhost.example", true},
		{"http://[::2]", true},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := Cleartext(u); got != tc.cleartext {
			t.Errorf("Cleartext(%s) = %t, want %t", tc.url, got, tc.cleartext)
		}
	}
	if !Host("[::1]") || !Host("LOCALHOST") || Host("gitea") {
		t.Error("Host misjudges bracketed IPv6, case or a plain name")
	}
}
