package registry

import (
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		wantErr  bool
	}{
		{in: "nginx", want: "index.docker.io/library/nginx"},
		{in: "docker.io/nginx", want: "index.docker.io/library/nginx"},
		{in: "index.docker.io/library/nginx", want: "index.docker.io/library/nginx"},
		{in: "nginx:1.27", want: "index.docker.io/library/nginx"},
		{in: "bitnami/redis", want: "index.docker.io/bitnami/redis"},
		{in: "ghcr.io/org/app@sha256:" + strings.Repeat("a", 64), want: "ghcr.io/org/app"},
		{in: "127.0.0.1:3000/org/app", want: "127.0.0.1:3000/org/app"},
		{in: "127.0.0.1:3000/org/app:v1", want: "127.0.0.1:3000/org/app"},
		{in: "localhost:5000/app", want: "localhost:5000/app"},
		{in: "Upper/Case", wantErr: true},
		{in: "", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Normalize(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Normalize(%q) error = %v, want error %t", tc.in, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
