package store

import "testing"

// TestHeldRef: hold release takes the whole digest or the 12 or more hex
// digits pinbot shows, with or without a tag, and refuses the rest.
func TestHeldRef(t *testing.T) {
	const full = "sha256:0b7e1c0b7e1c0b7e1c0b7e1c0b7e1c0b7e1c0b7e1c0b7e1c0b7e1c0b7e1c0b7e"
	for _, tc := range []struct {
		in, image, digest string
	}{
		{"gitea.example/acme/web@" + full, "gitea.example/acme/web", full},
		{"gitea.example/acme/web@sha256:0b7e1c0b7e1c", "gitea.example/acme/web", "sha256:0b7e1c0b7e1c"},
		{"gitea.example/acme/web:v3@sha256:0b7e1c0b7e1c", "gitea.example/acme/web", "sha256:0b7e1c0b7e1c"},
		{"gitea.example/acme/web@sha256:0b7e1c", "", ""},
		{"gitea.example/acme/web:v3", "", ""},
	} {
		image, digest, err := HeldRef(tc.in)
		if image != tc.image || digest != tc.digest || (err == nil) != (tc.image != "") {
			t.Errorf("HeldRef(%q) = %q, %q, %v; want %q, %q", tc.in, image, digest, err, tc.image, tc.digest)
		}
	}
}
