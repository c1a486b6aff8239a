package imageref

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePlatform(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Platform
		wantErr bool
	}{
		{"linux/amd64", Platform{"linux", "amd64", ""}, false},
		{"linux/arm64/v8", Platform{"linux", "arm64", "v8"}, false},
		{"linux", Platform{}, true},
		{"linux/", Platform{}, true},
		{"/amd64", Platform{}, true},
		{"linux/arm/v7/extra", Platform{}, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParsePlatform(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParsePlatform(%q) error = %v, want error %t", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParsePlatform(%q) (-want +got):\n%s", tc.in, diff)
			}
			if err == nil && got.String() != tc.in {
				t.Errorf("String() = %q, want %q", got.String(), tc.in)
			}
		})
	}
}
