package pins

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// digestLen is len("sha256:") + 64.
const digestLen = 71

// validDigest reports whether d is "sha256:" and 64 lowercase hex digits.
func validDigest(d string) bool {
	if len(d) != digestLen || d[:7] != "sha256:" {
		return false
	}
	ok := true
	for i := 7; i < len(d); i++ {
		ok = ok && lowerHex[d[i]]
	}
	return ok
}

var lowerHex = [256]bool{'0': true, '1': true, '2': true, '3': true, '4': true, '5': true, '6': true, '7': true,
	'8': true, '9': true, 'a': true, 'b': true, 'c': true, 'd': true, 'e': true, 'f': true}

// checkDigest returns ErrInvalidDigest, naming d, unless d is valid.
func checkDigest(d string) error {
	if !validDigest(d) {
		return fmt.Errorf("digest %q: %w", d, ErrInvalidDigest)
	}
	return nil
}

// validTag reports whether t is a valid OCI tag.
func validTag(t string) bool {
	if len(t) == 0 || len(t) > 128 {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_':
		case (c == '.' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

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

// normaliseRepo validates a repository (registry host optional) with the
// distribution grammar and returns go-containerregistry's full name for it.
func normaliseRepo(s string) (string, bool) {
	host, path := "", s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		first := s[:i]
		if first == "localhost" || strings.ContainsAny(first, ".:[") {
			host, path = first, s[i+1:]
		}
	}
	if host != "" && !validHost(host) {
		return "", false
	}
	if !validPath(path) {
		return "", false
	}
	repo, err := name.NewRepository(s, name.WeakValidation)
	if err != nil {
		return "", false
	}
	return repo.Name(), true
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

// validHost checks a registry host: DNS labels or a bracketed IPv6
// address, with an optional port.
func validHost(h string) bool {
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 2 {
			return false
		}
		for _, c := range h[1:end] {
			if !(c == ':' || c == '.' || '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
		return validPort(h[end+1:])
	}
	if c := strings.IndexByte(h, ':'); c >= 0 {
		if !validPort(h[c:]) {
			return false
		}
		h = h[:c]
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// validPort checks "" or ":" followed by 1 to 5 digits.
func validPort(p string) bool {
	if p == "" {
		return true
	}
	if p[0] != ':' || len(p) < 2 || len(p) > 6 {
		return false
	}
	for i := 1; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
	}
	return true
}

// validPath checks slash-separated components of lowercase alphanumerics
// joined by ".", "_", "__" or runs of "-".
func validPath(p string) bool {
	if p == "" || len(p) > 255 {
		return false
	}
	for _, comp := range strings.Split(p, "/") {
		if comp == "" || !isAlnum(comp[0]) || !isAlnum(comp[len(comp)-1]) {
			return false
		}
		for i := 1; i < len(comp); i++ {
			c := comp[i]
			switch {
			case isAlnum(c), c == '-':
			case c == '.':
				if !isAlnum(comp[i-1]) {
					return false
				}
			case c == '_':
				if !isAlnum(comp[i-1]) && !(comp[i-1] == '_' && i >= 2 && isAlnum(comp[i-2])) {
					return false
				}
			default:
				return false
			}
		}
	}
	return true
}

func isAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

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
		return "", fmt.Errorf("invalid image %q: not a repository reference", image)
	}
	return repo, nil
}

// mentions reports whether src holds the repository's path as a word,
// which is how a malformed file that cannot be parsed is judged to concern
// an update, and how files are filtered before parsing. It errs on the side
// of yes: "org/app" is mentioned by "other.host/org/app".
type mentions struct{ forms [][]byte }

func newMentions(repo string) mentions {
	r, err := name.NewRepository(repo, name.WeakValidation)
	if err != nil {
		return mentions{forms: [][]byte{[]byte(repo)}}
	}
	path := r.RepositoryStr()
	forms := [][]byte{[]byte(path)}
	if r.RegistryStr() == name.DefaultRegistry {
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
