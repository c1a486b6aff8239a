package pr

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/internal/redact"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %s", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

func sampleMeta() Meta {
	return Meta{
		Version: MetaVersion,
		Target:  "prod",
		Images:  []ImageMeta{{Image: "127.0.0.1:3000/org/app", Digest: d2, Tag: "v2", Source: SourceDigestFile}},
		Base:    "0123456789abcdef0123456789abcdef01234567",
		Head:    "89abcdef0123456789abcdef0123456789abcdef",
		Changes: []ChangeRecord{
			{
				File: "envs/prod/app.yaml", Line: 21, Kind: "manifest", Image: "127.0.0.1:3000/org/app",
				OldDigest: d1, NewDigest: d2, OldTag: "v1", NewTag: "v2",
				Before: "        image: 127.0.0.1:3000/org/app:v1@" + d1,
				After:  "        image: 127.0.0.1:3000/org/app:v2@" + d2,
			},
			{
				File: "envs/prod/values.yaml", Line: 4, Kind: "helm", Image: "127.0.0.1:3000/org/app",
				OldDigest: d1, NewDigest: d3,
				Before: "  digest: " + d1,
				After:  "  digest: " + d3,
			},
		},
	}
}

func TestRenderBodyGolden(t *testing.T) {
	p := Proposal{
		Meta: sampleMeta(),
		Facts: map[string]Facts{"127.0.0.1:3000/org/app": {
			Created:   time.Date(2026, 11, 30, 9, 15, 0, 0, time.UTC),
			Revision:  "4f2a9c1e",
			Source:    "https://git.example/org/app",
			Version:   "2.0.0",
			Index:     true,
			Platforms: []string{"linux/amd64", "linux/arm64"},
			Size:      31457280,
		}},
		Files: map[string]string{"127.0.0.1:3000/org/app": "out/digest"},
		Notes: []string{"envs/prod/values.yaml:4 pins a linux/arm64 manifest: pinned the linux/arm64 child of the index"},
	}
	golden(t, "body.golden.md", RenderBody(p))
	golden(t, "commit.golden.txt", CommitMessage(p.Meta))
}

func TestRenderBodyGroup(t *testing.T) {
	m := sampleMeta()
	m.Target = ""
	m.Images = append(m.Images, ImageMeta{Image: "index.docker.io/library/nginx", Digest: d4, Tag: "stable", Source: SourceDrift})
	m.Changes = append(m.Changes, ChangeRecord{File: "Dockerfile", Line: 1, Kind: "dockerfile", Image: "index.docker.io/library/nginx", OldDigest: d3, NewDigest: d4, OldTag: "stable", NewTag: "stable", Before: "FROM nginx:stable@" + d3 + " AS base", After: "FROM nginx:stable@" + d4 + " AS base"})
	golden(t, "body-group.golden.md", RenderBody(Proposal{Meta: m}))
	if got, want := Title(m), "Promote 2 images (all targets)"; got != want {
		t.Errorf("Title = %q, want %q", got, want)
	}
}

func TestParseBodyRoundTrip(t *testing.T) {
	m := sampleMeta()
	body := RenderBody(Proposal{Meta: m})
	got, err := ParseBody("Some text a reviewer added above.\n\n" + body)
	if err != nil {
		t.Fatal(err)
	}
	want := m
	for i := range want.Changes {
		want.Changes[i].Before, want.Changes[i].After = "", ""
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !got.SameProposal(m) {
		t.Error("SameProposal of a parsed body and its source = false")
	}
}

// A pull request opened before the keys became camelCase is still read,
// so pinbot updates it instead of opening a second one.
func TestParseBodyWrittenBeforeCamelCase(t *testing.T) {
	m := sampleMeta()
	body := RenderBody(Proposal{Meta: m})
	legacy := strings.NewReplacer(`"oldDigest"`, `"old_digest"`, `"newDigest"`, `"new_digest"`,
		`"oldTag"`, `"old_tag"`, `"newTag"`, `"new_tag"`).Replace(body)
	if legacy == body {
		t.Fatal("the body names no camelCase key to spell the old way")
	}
	got, err := ParseBody(legacy)
	if err != nil {
		t.Fatal(err)
	}
	if !got.SameProposal(m) {
		t.Errorf("SameProposal of a body with the old keys = false; parsed %+v", got.Changes)
	}
}

func TestParseBodyErrors(t *testing.T) {
	tests := []struct {
		name, body string
		is         error
		contains   string
	}{
		{name: "no block", body: "hello", is: ErrNoMeta},
		{name: "bad json", body: "<!-- pinbot:{nope} -->", contains: "parsing pinbot block"},
		{name: "other version", body: `<!-- pinbot:{"v":9} -->`, contains: "version 9"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseBody(tc.body)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("error %q does not contain %q", err, tc.contains)
			}
		})
	}
}

func TestRenderBodyHostile(t *testing.T) {
	// Text from images and files must not end the hidden block early or
	// break out of the tables and the diff fence.
	m := sampleMeta()
	m.Changes[0].After = "image: x ``` --> <!-- pinbot:{} -->"
	m.Images[0].Tag = "v2-->"
	body := RenderBody(Proposal{Meta: m, Facts: map[string]Facts{m.Images[0].Image: {Source: "a|b <script>"}}})
	if block := body[strings.LastIndex(body, hiddenOpen):]; strings.Count(block, "-->") != 1 {
		t.Errorf("the hidden block holds a comment end before its own:\n%s", block)
	}
	got, err := ParseBody(body)
	if err != nil {
		t.Fatal(err)
	}
	if got.Images[0].Tag != "v2-->" {
		t.Errorf("tag = %q after the round trip", got.Images[0].Tag)
	}
	if !strings.Contains(body, "````diff") {
		t.Error("the diff fence does not outgrow the backticks inside it")
	}
	if !strings.Contains(body, "`a\\|b <script>`") {
		t.Error("HTML from labels is not quoted as code")
	}
}

func TestRenderBodyRedacts(t *testing.T) {
	secret := "s3cr3t-t0ken-for-body-test"
	redact.Register(secret)
	m := sampleMeta()
	m.Changes[0].After = "image: x # " + secret
	body := RenderBody(Proposal{Meta: m})
	if strings.Contains(body, secret) {
		t.Error("a registered secret reached the body")
	}
}

func TestNaming(t *testing.T) {
	slugs := []struct{ image, want string }{
		{"127.0.0.1:3000/org/app", "127.0.0.1-3000-org-app"},
		{"index.docker.io/library/nginx", "index.docker.io-library-nginx"},
		{"registry.example/Org/my_app", "registry.example-org-my-app"},
		{"r.example/a.lock", "r.example-a-lock"},
	}
	for _, tc := range slugs {
		if got := Slug(tc.image); got != tc.want {
			t.Errorf("Slug(%q) = %q, want %q", tc.image, got, tc.want)
		}
	}
	if got, want := Branch("pinbot/", "prod", "127.0.0.1:3000/org/app"), "pinbot/prod/127.0.0.1-3000-org-app"; got != want {
		t.Errorf("Branch = %q, want %q", got, want)
	}
	if got, want := GroupBranch("pinbot/", "prod"), "pinbot/prod/drift"; got != want {
		t.Errorf("GroupBranch = %q, want %q", got, want)
	}
	if got, want := GroupBranch("pinbot/", ""), "pinbot/drift"; got != want {
		t.Errorf("GroupBranch all = %q, want %q", got, want)
	}
	if got, want := Title(sampleMeta()), "Promote 127.0.0.1:3000/org/app to v2@sha256:222222222222 (prod)"; got != want {
		t.Errorf("Title = %q, want %q", got, want)
	}
}

func digest(c string) string { return "sha256:" + strings.Repeat(c, 64) }

var d1, d2, d3, d4 = digest("1"), digest("2"), digest("3"), digest("4")

func TestDescribeImages(t *testing.T) {
	ims := []ImageMeta{{Image: "r.example/web", Tag: "v2", Digest: d2}, {Image: "r.example/api", Digest: d3}}
	want := "r.example/web v2@sha256:222222222222, r.example/api sha256:333333333333"
	if got := DescribeImages(ims); got != want {
		t.Errorf("DescribeImages = %q, want %q", got, want)
	}
}
