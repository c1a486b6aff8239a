package promote

import (
	"path/filepath"
	"testing"
)

func TestCacheDirFor(t *testing.T) {
	tests := []struct{ url, base, want string }{
		{"https://gitea.example/org/manifests.git", "main", "/c/clones/gitea.example/org/manifests/main"},
		{"http://127.0.0.1:3000/org/manifests.git", "release/1.0", "/c/clones/127.0.0.1_3000/org/manifests/release_1.0"},
		{"https://gitea.example/sub/path/org/m", "..", "/c/clones/gitea.example/sub/path/org/m/_.."},
	}
	for _, tc := range tests {
		if got := cacheDirFor("/c", tc.url, tc.base); got != filepath.FromSlash(tc.want) {
			t.Errorf("cacheDirFor(%q, %q) = %q, want %q", tc.url, tc.base, got, tc.want)
		}
	}
}
