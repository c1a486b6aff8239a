package pins

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/internal/imageref"
)

// refSeeds are references for the differential test of parseRef.
var refSeeds = []string{
	"nginx", "nginx:1.27", "nginx:1.27@" + digestA, "docker.io/nginx@" + digestB, "index.docker.io/library/nginx",
	"org/app", "localhost/app", "localhost:5000/a/b/c:v", "127.0.0.1:3000/org/app:v2@" + digestC,
	"[::1]:5000/app", "[fe80::1]/app:x", "a.b-c.d/e_f/g__h/i-j.k", "app:", "app:-x", "app:.x", "UPPER/app",
	"host:/app", "host:5000", "a//b", "a/b/", ".a/b", "[::1/a", "app@sha256:abc", "app@sha512:" + strings.Repeat("a", 128),
	"app@", "@" + digestA, "", " app", "app ", "https://host/app", "a:b:c", "a@b@" + digestA, "host:99999/app",
	"-host.x/app", "host-.x/app", "a_-b", "a___b", "a..b", "app:" + strings.Repeat("t", 129),
}

// FuzzParseRefAgreesWithImageref checks pins' allocation-free reference
// parser against the shared one in internal/imageref: both accept the same
// strings and split them the same way, and parseRef's offsets point at the
// tag and digest it returns.
func FuzzParseRefAgreesWithImageref(f *testing.F) {
	for _, s := range refSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1024 {
			return // parseRef refuses long strings before looking at them
		}
		got, ok := parseRef(s, repoCache{})
		want, err := imageref.Parse(s)
		if ok != (err == nil) {
			t.Fatalf("parseRef(%q) ok = %t, imageref.Parse error = %v", s, ok, err)
		}
		if !ok {
			return
		}
		if diff := cmp.Diff(want, imageref.Ref{Repository: got.repo, Tag: got.tag, Digest: got.digest}); diff != "" {
			t.Errorf("parseRef(%q) disagrees with imageref.Parse (-imageref +pins):\n%s", s, diff)
		}
		if got.tagOff >= 0 && s[got.tagOff:got.tagOff+len(got.tag)] != got.tag || got.tagOff < 0 && got.tag != "" {
			t.Errorf("parseRef(%q): tag offset %d does not point at tag %q", s, got.tagOff, got.tag)
		}
		if got.digOff >= 0 && s[got.digOff:] != got.digest || got.digOff < 0 && got.digest != "" {
			t.Errorf("parseRef(%q): digest offset %d does not point at digest %q", s, got.digOff, got.digest)
		}
	})
}
