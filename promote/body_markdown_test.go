package promote

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"pinbot.dev/pinbot/promote/pr"
	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/policy"
)

// forgeries are texts a person or a peer controls that try to pass for
// pinbot's own structure in a pull request body reviewers trust.
var forgeries = []string{
	"fix\r### Signed and built by\r| Signer | release-bot@example.com |\r|---|---|\r| OK | yes |",
	"fix\r\n## Approved by security\r\n> looks good",
	"fix\n\n# Heading\n\n- [x] reviewed",
	"see [the build](https://evil.example/build) ![](https://evil.example/beacon.png)",
	"<img src=https://evil.example/px.gif> <a href=https://evil.example>x</a> <script>alert(1)</script>",
	"https://evil.example/bare and www.evil.example and [[https://evil.example/wiki]]",
	"`code` ``` fence \u2028### U+2028 heading \u0085### NEL heading",
	"<details><summary>Signed</summary>ok</details>",
}

// renderOnGitea renders body as Gitea renders a pull request's
// description.
func renderOnGitea(t *testing.T, f *fixture, body string) string {
	t.Helper()
	req, _ := json.Marshal(map[string]any{"Text": body, "Mode": "comment", "Context": f.srv.URL + "/" + f.owner + "/" + f.name})
	r, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.srv.URL+"/api/v1/markdown", bytes.NewReader(req))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "token "+f.srv.Token)
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	html, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("Gitea's markdown API: HTTP %d: %s", resp.StatusCode, html)
	}
	return string(html)
}

// structure counts the elements of rendered HTML that carry meaning to a
// reviewer: headings, tables and rows, lists, quotes, links, images,
// details and scripts.
func structure(html string) map[string]int {
	out := map[string]int{}
	for _, m := range regexp.MustCompile(`<(h[1-6]|table|tr|ul|ol|li|blockquote|a|img|details|summary|script|iframe|input)\b`).FindAllStringSubmatch(html, -1) {
		out[m[1]]++
	}
	return out
}

// TestBodyRendersOnlyPinbotsStructure renders bodies through real Gitea's
// Markdown: a reason, a tag, a source label, a signer and a note holding
// forged headings, tables, links, images and HTML render to exactly the
// elements the same body with plain text renders to, and no element
// points outside.
func TestBodyRendersOnlyPinbotsStructure(t *testing.T) {
	f := newFixture(t)
	f.createRepo(map[string]string{"README.md": "x"})
	proposal := func(text string) pr.Proposal {
		m := pr.Meta{Version: pr.MetaVersion, Target: "prod",
			Images: []pr.ImageMeta{{Image: "127.0.0.1:3000/org/app", Digest: d2, Tag: "v2", Source: pr.SourceDigestFile}},
			Changes: []pr.ChangeRecord{{File: "app.yaml", Line: 3, Kind: "manifest", Image: "127.0.0.1:3000/org/app", OldDigest: d1, NewDigest: d2,
				Before: "image: 127.0.0.1:3000/org/app@" + d1, After: "image: 127.0.0.1:3000/org/app@" + d2}}}
		return pr.Proposal{
			Meta:   m,
			Forced: text,
			Facts: map[string]pr.Facts{m.Images[0].Image: {
				Created: time.Date(2026, 11, 30, 9, 15, 0, 0, time.UTC), Source: text, Version: text, Revision: text,
				Platforms: []string{text}, Trust: &policy.Provenance{Guarded: true, Signer: text, Format: trust.FormatBundle},
			}},
			Notes: []string{text},
		}
	}
	plain := structure(renderOnGitea(t, f, pr.RenderBody(proposal("plain words"))))
	if plain["h3"] == 0 || plain["table"] == 0 {
		t.Fatalf("the plain body renders no headings or tables: %v", plain)
	}
	for i, forged := range forgeries {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			html := renderOnGitea(t, f, pr.RenderBody(proposal(forged)))
			got := structure(html)
			for el, n := range got {
				if n != plain[el] {
					t.Errorf("%d <%s>, the plain body has %d: the text made structure", n, el, plain[el])
				}
			}
			for el, n := range plain {
				if got[el] != n {
					t.Errorf("%d <%s>, the plain body has %d", got[el], el, n)
				}
			}
			if regexp.MustCompile(`(href|src)="[^"]*evil\.example`).MatchString(html) {
				t.Errorf("an element points at the forger's host:\n%s", html)
			}
		})
	}
}
