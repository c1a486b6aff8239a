package promote

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/registry"
)

func TestChoose(t *testing.T) {
	amd64 := imageref.Platform{OS: "linux", Architecture: "amd64"}
	arm64 := imageref.Platform{OS: "linux", Architecture: "arm64"}
	arm64v8 := imageref.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}
	index := func(d string) *registry.Image { return &registry.Image{Digest: d, Index: true} }
	manifest := func(d string, p imageref.Platform) *registry.Image { return &registry.Image{Digest: d, Platform: &p} }

	tests := []struct {
		name     string
		old      *registry.Image
		promoted registry.Image
		opts     ChooseOptions
		want     digestChoice
		wantNote string
		wantErr  error
	}{
		{name: "already pinned", old: index(d2), promoted: *index(d2)},
		{name: "index keeps index", old: index(d1), promoted: *index(d2)},
		{name: "platform pin takes the child", old: manifest(d1, arm64), promoted: *index(d2), want: digestChoice{Child: &arm64}},
		{name: "platform pin keeps its variant", old: manifest(d1, arm64v8), promoted: *index(d2), want: digestChoice{Child: &arm64v8}},
		{name: "single manifest same platform", old: manifest(d1, amd64), promoted: *manifest(d2, amd64)},
		{name: "arm64 equals arm64/v8", old: manifest(d1, arm64), promoted: *manifest(d2, arm64v8)},
		{name: "index to single manifest refused", old: index(d1), promoted: *manifest(d2, amd64), wantErr: errKindChange},
		{name: "index to single manifest allowed", old: index(d1), promoted: *manifest(d2, amd64), opts: ChooseOptions{AllowKindChange: true}, wantNote: "kind changed from an image index to a single linux/amd64 manifest"},
		{name: "platform switch refused", old: manifest(d1, arm64), promoted: *manifest(d2, amd64), wantErr: errKindChange},
		{name: "platform switch allowed", old: manifest(d1, arm64), promoted: *manifest(d2, amd64), opts: ChooseOptions{AllowKindChange: true}, wantNote: "platform changed from linux/arm64 to linux/amd64"},
		{name: "manifest without platform and index", old: &registry.Image{Digest: d1}, promoted: *index(d2), wantErr: errKindChange},
		{name: "old gone, index kept", old: nil, promoted: *index(d2), wantNote: "pinned the promoted image index"},
		{name: "old gone, platform flag", old: nil, promoted: *index(d2), opts: ChooseOptions{Platform: arm64}, want: digestChoice{Child: &arm64}, wantNote: "pinned the linux/arm64 child as --platform asks"},
		{name: "old gone, single manifest", old: nil, promoted: *manifest(d2, amd64), wantNote: "pinned the promoted linux/amd64 manifest"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chooseDigest("a.yaml:3", tc.old, tc.promoted, tc.opts)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("error = %v, want %v", err, tc.wantErr)
				}
				if !strings.Contains(err.Error(), "a.yaml:3") {
					t.Errorf("error %q does not name the pin", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got.Note, tc.wantNote) || (tc.wantNote == "") != (got.Note == "") {
				t.Errorf("note = %q, want it to contain %q", got.Note, tc.wantNote)
			}
			got.Note = ""
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
