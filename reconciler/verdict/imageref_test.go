package verdict

import (
	"strings"
	"testing"
)

const repo = "registry.example:5000/team/web"

var digestA = "sha256:" + strings.Repeat("a", 64)

func TestParseImageID(t *testing.T) {
	for _, tc := range []struct {
		id, digest string
		form       imageIDForm
	}{
		{repo + "@" + digestA, digestA, formManifest},
		{"docker-pullable://" + repo + "@" + digestA, digestA, formManifest},
		{"docker.io/library/nginx@" + digestA, digestA, formManifest},
		{digestA, digestA, formConfig},
		{"docker://" + digestA, digestA, formConfig},
		{"sha256:abc", "", formInvalid},
		{repo + ":v1", "", formInvalid},
	} {
		d, f := parseImageID(tc.id)
		if d != tc.digest || f != tc.form {
			t.Errorf("parseImageID(%q) = %q, %d; want %q, %d", tc.id, d, f, tc.digest, tc.form)
		}
	}
	for _, tc := range []struct{ image, repo, digest string }{
		{repo + ":v1@" + digestA, repo, digestA},
		{repo + "@" + digestA, repo, digestA},
		{"nginx@" + digestA, "nginx", digestA},
		{repo + ":v1", "", ""},
	} {
		r, d, _ := pinnedImage(tc.image)
		if r != tc.repo || d != tc.digest {
			t.Errorf("pinnedImage(%q) = %q, %q; want %q, %q", tc.image, r, d, tc.repo, tc.digest)
		}
	}
}
