package ciinput

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/promote/pr"
)

const (
	d1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	d2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	d3 = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
	d4 = "sha256:4444444444444444444444444444444444444444444444444444444444444444"
)

func TestParseDigestFile(t *testing.T) {
	tests := []struct {
		name, data, want, wantErr string
	}{
		{name: "kaniko with newline", data: d2 + "\n", want: d2},
		{name: "no newline", data: d2, want: d2},
		{name: "crlf", data: d2 + "\r\n", want: d2},
		{name: "empty", data: "\n", wantErr: "digest.txt: empty digest file"},
		{name: "upper case", data: strings.ToUpper(d2), wantErr: "digest.txt:1: "},
		{name: "two lines", data: d2 + "\n" + d3 + "\n", wantErr: "digest.txt:2: a digest file holds one digest, but a second line follows: \"" + d3 + "\""},
		{name: "huge line is clipped", data: "sha256:" + strings.Repeat("0", 5<<20), wantErr: "(5242887 bytes): invalid digest"},
		{name: "image name instead", data: "app@" + d2, wantErr: "invalid digest"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDigestFile("digest.txt", []byte(tc.data))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseImageNameWithDigest(t *testing.T) {
	tests := []struct {
		name, data string
		want       []promote.Input
		wantErr    string
	}{
		{
			name: "repo@digest",
			data: "127.0.0.1:3000/org/app@" + d2 + "\n",
			want: []promote.Input{{Image: "127.0.0.1:3000/org/app", Digest: d2, Source: pr.SourceImageNameFile, File: "f"}},
		},
		{
			name: "repo:tag@digest",
			data: "127.0.0.1:3000/org/app:v2@" + d2,
			want: []promote.Input{{Image: "127.0.0.1:3000/org/app", Tags: []string{"v2"}, Digest: d2, Source: pr.SourceImageNameFile, File: "f"}},
		},
		{
			name: "one line per destination",
			data: "r.example/app:v2@" + d2 + "\nr.example/app:latest@" + d2 + "\nmirror.example/app:v2@" + d2 + "\n",
			want: []promote.Input{
				{Image: "r.example/app", Tags: []string{"v2", "latest"}, Digest: d2, Source: pr.SourceImageNameFile, File: "f"},
				{Image: "mirror.example/app", Tags: []string{"v2"}, Digest: d2, Source: pr.SourceImageNameFile, File: "f"},
			},
		},
		{name: "no digest", data: "r.example/app:v2\n", wantErr: `f:1: "r.example/app:v2" has no @sha256`},
		{name: "two digests", data: "r.example/app@" + d2 + "\nr.example/app@" + d1, wantErr: "f:2: digest " + d1},
		{name: "empty", data: "", wantErr: "f: empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseImageNameWithDigest("f", []byte(tc.data))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseMetadata(t *testing.T) {
	tests := []struct {
		name    string
		file    string // in testdata, or inline data
		data    string
		want    []promote.Input
		wantErr string
	}{
		{
			name: "several names, several repositories",
			file: "buildx-metadata.json",
			want: []promote.Input{
				{Image: "registry.example/org/app", Tags: []string{"1.4.0", "latest"}, Digest: d2, Source: pr.SourceBuildxMetadata, File: "buildx-metadata.json"},
				{Image: "registry.example/org/app-mirror", Tags: []string{"1.4.0"}, Digest: d2, Source: pr.SourceBuildxMetadata, File: "buildx-metadata.json"},
			},
		},
		{
			name: "bake",
			file: "buildx-bake-metadata.json",
			want: []promote.Input{
				{Image: "registry.example/org/api", Tags: []string{"main"}, Digest: d3, Source: pr.SourceBuildxMetadata, File: "buildx-bake-metadata.json"},
				{Image: "registry.example/org/web", Tags: []string{"main"}, Digest: d4, Source: pr.SourceBuildxMetadata, File: "buildx-bake-metadata.json"},
			},
		},
		{name: "not JSON", data: "sha256:abc", wantErr: "meta.json:1: parsing buildx metadata JSON"},
		{name: "not JSON on line 3", data: "{\n  \"containerimage.digest\": \"" + d2 + "\",\n  \"image.name\": oops\n}", wantErr: "meta.json:3: parsing buildx metadata JSON"},
		{name: "bake target not an object", data: `{"web": "x", "api": {"containerimage.digest":"` + d2 + `","image.name":"r.example/api"}}`, wantErr: `meta.json: bake target "web": want an object`},
		{name: "bake target without digest", data: `{"web": {"image.name":"r.example/web"}, "api": {"containerimage.digest":"` + d2 + `","image.name":"r.example/api"}}`, wantErr: `meta.json: no "web.containerimage.digest" key`},
		{name: "huge image.name is clipped", data: `{"containerimage.digest":"` + d2 + `","image.name":"r.example/` + strings.Repeat("a", 1<<20) + `"}`, wantErr: `key "image.name": image reference "r.example/aaaaaaaa`},
		{name: "no digest key", data: `{"image.name":"r.example/app:1"}`, wantErr: `meta.json: no "containerimage.digest" key`},
		{name: "no name key", data: `{"containerimage.digest":"` + d2 + `"}`, wantErr: `meta.json: no key "image.name"`},
		{name: "bad digest", data: `{"containerimage.digest":"sha256:12","image.name":"r.example/app"}`, wantErr: `meta.json: key "containerimage.digest": "sha256:12": invalid digest`},
		{name: "digest not a string", data: `{"containerimage.digest":1,"image.name":"r.example/app"}`, wantErr: `meta.json: key "containerimage.digest": want a string`},
		{name: "bad name", data: `{"containerimage.digest":"` + d2 + `","image.name":"r.example/App:1"}`, wantErr: `meta.json: key "image.name"`},
		{name: "empty name", data: `{"containerimage.digest":"` + d2 + `","image.name":" , "}`, wantErr: `meta.json: key "image.name" is empty`},
		{name: "name with other digest", data: `{"containerimage.digest":"` + d2 + `","image.name":"r.example/app@` + d1 + `"}`, wantErr: "names digest " + d1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name, data := "meta.json", []byte(tc.data)
			if tc.file != "" {
				var err error
				if data, err = os.ReadFile(filepath.Join("testdata", tc.file)); err != nil {
					t.Fatal(err)
				}
				name = tc.file
			}
			got, err := ParseMetadata(name, data)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestInputSpec(t *testing.T) {
	files := map[string]string{
		"digest":   "testdata/kaniko-digest",
		"name":     "testdata/kaniko-image-name-with-digest",
		"metadata": "testdata/buildx-metadata.json",
	}
	read := func(name string) ([]byte, error) {
		if f, ok := files[name]; ok {
			return os.ReadFile(f)
		}
		if name == "huge" {
			return []byte(strings.Repeat("x", maxMetadataFile+1)), nil
		}
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	const app = "registry.example/org/app"
	tests := []struct {
		name    string
		spec    Spec
		usage   string // Validate error
		readErr string
		want    []promote.Input
	}{
		{name: "nothing", spec: Spec{}, usage: "no input: give exactly one of"},
		{name: "image without tag", spec: Spec{Image: app}, usage: "name a tag to resolve"},
		{name: "two inputs", spec: Spec{Image: app, Digest: d2, DigestFile: "digest"}, usage: "give exactly one of"},
		{name: "digest without image", spec: Spec{Digest: d2}, usage: "--digest needs --image"},
		{name: "bad digest", spec: Spec{Image: app, Digest: "sha256:xyz"}, usage: "flag --digest"},
		{name: "digest file without image", spec: Spec{DigestFile: "digest"}, usage: "--digest-file needs --image"},
		{name: "digest twice", spec: Spec{Image: app + "@" + d1, Digest: d2}, usage: "carries a digest"},
		{name: "bad image", spec: Spec{Image: "a b:c"}, usage: "flag --image"},
		{
			name: "tag resolved now",
			spec: Spec{Image: app + ":v2"},
			want: []promote.Input{{Image: app, Tags: []string{"v2"}, Source: pr.SourceRegistry}},
		},
		{
			name: "image and digest",
			spec: Spec{Image: app, Digest: d2},
			want: []promote.Input{{Image: app, Digest: d2, Source: pr.SourceFlag}},
		},
		{
			name: "image with digest",
			spec: Spec{Image: app + ":v2@" + d2},
			want: []promote.Input{{Image: app, Tags: []string{"v2"}, Digest: d2, Source: pr.SourceFlag}},
		},
		{
			name: "digest file and tagged image",
			spec: Spec{Image: app + ":1.4.0", DigestFile: "digest"},
			want: []promote.Input{{Image: app, Tags: []string{"1.4.0"}, Digest: d2, Source: pr.SourceDigestFile, File: "digest"}},
		},
		{
			name: "image-name-with-digest file",
			spec: Spec{ImageNameFile: "name"},
			want: []promote.Input{{Image: app, Tags: []string{"1.4.0"}, Digest: d2, Source: pr.SourceImageNameFile, File: "name"}},
		},
		{
			name: "metadata selected by image",
			spec: Spec{MetadataFile: "metadata", Image: "registry.example/org/app-mirror"},
			want: []promote.Input{{Image: "registry.example/org/app-mirror", Tags: []string{"1.4.0"}, Digest: d2, Source: pr.SourceBuildxMetadata, File: "metadata"}},
		},
		{name: "metadata without the image", spec: Spec{MetadataFile: "metadata", Image: "registry.example/org/other"}, readErr: "metadata names no image registry.example/org/other"},
		{name: "metadata with another digest", spec: Spec{MetadataFile: "metadata", Image: app + "@" + d1}, readErr: "metadata names digest " + d2},
		{name: "missing file", spec: Spec{Image: app, DigestFile: "nope"}, readErr: "reading digest file nope: open nope"},
		{name: "digest file too large", spec: Spec{Image: app, DigestFile: "huge"}, readErr: "huge: too large: a digest file is at most 4096 bytes"},
		{name: "image-name file too large", spec: Spec{ImageNameFile: "huge"}, readErr: "huge: too large: a image-name-with-digest file is at most 65536 bytes"},
		{name: "metadata file too large", spec: Spec{MetadataFile: "huge"}, readErr: "huge: too large: a buildx metadata file is at most 4194304 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Validate()
			if tc.usage != "" {
				if err == nil || !strings.Contains(err.Error(), tc.usage) {
					t.Fatalf("Validate() = %v, want it to contain %q", err, tc.usage)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate(): %s", err)
			}
			got, err := tc.spec.Read(read)
			if tc.readErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.readErr) {
					t.Fatalf("Read() error = %v, want it to contain %q", err, tc.readErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Read(): %s", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRefAndDigestErrors(t *testing.T) {
	if got := pr.Ref("v2", d2); got != "v2@sha256:222222222222" {
		t.Errorf("Ref = %q", got)
	}
	if got := pr.Ref("", d2); got != "sha256:222222222222" {
		t.Errorf("Ref without tag = %q", got)
	}
	if !errors.Is(func() error { _, err := parseDigestFile("f", []byte("x")); return err }(), imageref.ErrInvalidDigest) {
		t.Error("parseDigestFile error does not wrap ErrInvalidDigest")
	}
}

// TestReadBoundsFileSize reads oversized CI files from disk: each is
// refused, and the error is short.
func TestReadBoundsFileSize(t *testing.T) {
	huge := filepath.Join(t.TempDir(), "huge")
	line := "registry.example/org/app@" + d2 + strings.Repeat("x", 5<<20) + "\n"
	if err := os.WriteFile(huge, []byte(strings.Repeat(line, 2)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []Spec{
		{Image: "registry.example/org/app", DigestFile: huge},
		{ImageNameFile: huge},
		{MetadataFile: huge},
	} {
		_, err := spec.Read(nil)
		if !errors.Is(err, errInputTooLarge) {
			t.Errorf("Read(%+v) = %v, want errInputTooLarge", spec, err)
		} else if len(err.Error()) > 300 {
			t.Errorf("error is %d bytes long", len(err.Error()))
		}
	}
}

// TestLongLineIsEchoedClipped is the 5 MB line in an image-name file: the
// error names file and line, and quotes the value once, clipped.
func TestLongLineIsEchoedClipped(t *testing.T) {
	line := "registry.example/org/" + strings.Repeat("a", 60<<10) + "@" + d2
	_, err := ParseImageNameWithDigest("names", []byte(line+"\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "names:1: image reference \"registry.example/org/aaaa") {
		t.Fatalf("error = %.300v", err)
	}
	if len(err.Error()) > 300 {
		t.Errorf("error is %d bytes long", len(err.Error()))
	}
}
