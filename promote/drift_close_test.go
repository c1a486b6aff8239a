package promote

import (
	"testing"

	"pinbot.dev/pinbot/promote/pr"
)

// TestCloseIfDrift: drift closes only the pull requests it opened, every
// image of which came from drift; a promotion's, or one with an image of
// another source, stays open.
func TestCloseIfDrift(t *testing.T) {
	img := func(src pr.Source) pr.ImageMeta { return pr.ImageMeta{Image: "r.example/web", Digest: d2, Source: src} }
	for _, tc := range []struct {
		name string
		open *pr.Meta
		want bool
	}{
		{"no hidden block", nil, false},
		{"no images", &pr.Meta{}, false},
		{"drift's own", &pr.Meta{Images: []pr.ImageMeta{img(pr.SourceDrift), img(pr.SourceDrift)}}, true},
		{"a promotion's", &pr.Meta{Images: []pr.ImageMeta{img(pr.SourceDigestFile)}}, false},
		{"drift's and a promotion's", &pr.Meta{Images: []pr.ImageMeta{img(pr.SourceDrift), img(pr.SourceFlag)}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, comment := closeIfDrift(tc.open)
			if got != tc.want || (got && comment == "") || (!got && comment != "") {
				t.Errorf("closeIfDrift = %t, %q; want %t with a comment only when it closes", got, comment, tc.want)
			}
		})
	}
}
