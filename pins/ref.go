package pins

import (
	"bytes"
	"fmt"
	"strings"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/imageref"
)

// validDigest reports whether d is "sha256:" and 64 lowercase hex digits.
func validDigest(d string) bool { return imageref.ValidDigest(d) }

// checkDigest returns imageref.ErrInvalidDigest, naming d, unless d is
// valid.
func checkDigest(d string) error { return imageref.CheckDigest(d) }

// validTag reports whether t is a valid OCI tag.
func validTag(t string) bool { return imageref.ValidTag(t) }

// ref is an image reference split into its parts. Offsets index the string
// it was parsed from; they are -1 for a missing part.
type ref struct {
	repo   string // normalised repository
	tag    string
	digest string
	tagOff int // start of the tag
	digOff int // start of the digest ("sha256:...")
	end    int // length of the reference
}

// parseRef parses s as a whole image reference whose digest, if any, is a
// valid sha256 digest. It reports false for anything else, including
// strings with spaces, URLs and references with other digest algorithms.
//
// c, if not nil, remembers normalised repositories.
func parseRef(s string, c repoCache) (ref, bool) {
	r := ref{tagOff: -1, digOff: -1, end: len(s)}
	if len(s) == 0 || len(s) > 1024 {
		return r, false
	}
	base := s
	if at := strings.IndexByte(s, '@'); at >= 0 {
		if !validDigest(s[at+1:]) {
			return r, false
		}
		r.digest, r.digOff = s[at+1:], at+1
		base = s[:at]
	}
	if c := strings.LastIndexByte(base, ':'); c >= 0 && !strings.Contains(base[c+1:], "/") {
		if !validTag(base[c+1:]) {
			return r, false
		}
		r.tag, r.tagOff = base[c+1:], c+1
		base = base[:c]
	}
	repo, ok := c.normalise(base)
	if !ok {
		return r, false
	}
	r.repo = repo
	return r, true
}

// parseRepo parses s as a bare repository, without tag or digest.
func parseRepo(s string, c repoCache) (string, bool) {
	r, ok := parseRef(s, c)
	if !ok || r.tagOff >= 0 || r.digOff >= 0 {
		return "", false
	}
	return r.repo, true
}

// normaliseRepo validates a repository (registry host optional) and
// returns its normalised name.
func normaliseRepo(s string) (string, bool) {
	repo, err := imageref.ParseRepository(s)
	return repo, err == nil
}

// repoCache remembers normalised repository names ("" for invalid ones):
// a tree names the same few hundred repositories thousands of times. Each
// goroutine keeps its own, in its arena.
type repoCache map[string]string

const maxRepoCache = 4096

func (c repoCache) normalise(s string) (string, bool) {
	if n, ok := c[s]; ok {
		return n, n != ""
	}
	n, ok := normaliseRepo(s)
	if c != nil && len(c) < maxRepoCache {
		c[s] = n
	}
	return n, ok
}

// updateRepo normalises Update.Image, which may carry a tag or a digest of
// any algorithm.
func updateRepo(image string) (string, error) {
	base := image
	if at := strings.IndexByte(base, '@'); at >= 0 {
		base = base[:at]
	}
	if c := strings.LastIndexByte(base, ':'); c >= 0 && !strings.Contains(base[c+1:], "/") {
		base = base[:c]
	}
	repo, ok := normaliseRepo(base)
	if !ok {
		return "", fmt.Errorf("invalid image %s: not a repository reference", clip.QuoteRef(image))
	}
	return repo, nil
}

// mentions reports whether src holds the repository's path as a word,
// which is how a malformed file that cannot be parsed is judged to concern
// an update, and how files are filtered before parsing. It errs on the side
// of yes: "org/app" is mentioned by "other.host/org/app".
type mentions struct{ forms [][]byte }

func newMentions(repo string) mentions {
	r, err := imageref.Parse(repo)
	if err != nil {
		return mentions{forms: [][]byte{[]byte(repo)}}
	}
	path := r.Path()
	forms := [][]byte{[]byte(path)}
	if r.Registry() == imageref.DefaultRegistry {
		if short, ok := strings.CutPrefix(path, "library/"); ok {
			forms = [][]byte{[]byte(short)} // "library/x" contains "x" after a slash
		}
	}
	return mentions{forms: forms}
}

func (m mentions) in(src []byte) bool {
	for _, f := range m.forms {
		for off := 0; ; {
			i := bytes.Index(src[off:], f)
			if i < 0 {
				break
			}
			i += off
			j := i + len(f)
			if (i == 0 || !isRefByte(src[i-1]) || src[i-1] == '/') && (j == len(src) || !isRefByte(src[j]) || src[j] == ':' || src[j] == '@') {
				return true
			}
			off = i + 1
		}
	}
	return false
}

// isRefByte reports bytes that can continue a repository name.
func isRefByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '.' || c == '_' || c == '-' || c == '/' || c == ':' || c == '@'
}
