package imageref

import (
	"errors"
	"fmt"
	"strings"

	"pinbot.dev/pinbot/internal/clip"
)

// DefaultRegistry is the registry of a reference that names none, and the
// one "docker.io" stands for.
const DefaultRegistry = "index.docker.io"

// ErrInvalidReference reports a string that is not an image reference.
var ErrInvalidReference = errors.New("invalid image reference")

// maxTag is the longest tag the distribution grammar allows.
const maxTag = 128

// maxPath is the longest repository path go-containerregistry accepts.
const maxPath = 255

// Ref is an image reference split into its parts.
type Ref struct {
	// Repository is the normalised repository, registry included:
	// "index.docker.io/library/nginx", "127.0.0.1:3000/org/app".
	Repository string
	// Tag is the tag, or "".
	Tag string
	// Digest is the digest ("sha256:..."), or "".
	Digest string
}

// String returns repository[:tag][@digest].
func (r Ref) String() string {
	s := r.Repository
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// Registry returns the registry host of r.Repository, with its port:
// "index.docker.io", "127.0.0.1:3000".
func (r Ref) Registry() string {
	host, _, _ := strings.Cut(r.Repository, "/")
	return host
}

// Path returns r.Repository without its registry: "library/nginx".
func (r Ref) Path() string {
	_, path, _ := strings.Cut(r.Repository, "/")
	return path
}

// Split cuts s into name, tag and digest by syntax alone, validating and
// normalising nothing: the digest follows the first "@", and the tag
// follows the last ":" of the rest when no "/" comes after that colon, so a
// registry port is not a tag. "host:5000/org/app:v1@sha256:..." gives
// ("host:5000/org/app", "v1", "sha256:...").
func Split(s string) (name, tag, digest string) {
	p := split(s)
	return p.name, p.tag, p.digest
}

// parts is a reference cut by syntax; hasTag and hasDigest tell an empty
// part from a missing one.
type parts struct {
	name, tag, digest string
	hasTag, hasDigest bool
}

func split(s string) parts {
	p := parts{name: s}
	if at := strings.IndexByte(s, '@'); at >= 0 {
		p.name, p.digest, p.hasDigest = s[:at], s[at+1:], true
	}
	if c := strings.LastIndexByte(p.name, ':'); c >= 0 && !strings.Contains(p.name[c+1:], "/") {
		p.name, p.tag, p.hasTag = p.name[:c], p.name[c+1:], true
	}
	return p
}

// Parse validates an image reference and splits it into its normalised
// repository, tag and digest: "app:1.2@sha256:..." gives
// {"index.docker.io/library/app", "1.2", "sha256:..."}. A digest must be a
// sha256 one ([ErrInvalidDigest] otherwise); other faults wrap
// [ErrInvalidReference]. Errors name s.
func Parse(s string) (Ref, error) {
	if s == "" {
		return Ref{}, fmt.Errorf("empty image reference: %w", ErrInvalidReference)
	}
	p := split(s)
	if p.hasDigest && !ValidDigest(p.digest) {
		return Ref{}, fmt.Errorf("image reference %s: %w", clip.QuoteRef(s), ErrInvalidDigest)
	}
	if p.hasTag && p.tag == "" {
		return Ref{}, fmt.Errorf("image reference %s: empty tag after the colon: %w", clip.QuoteRef(s), ErrInvalidReference)
	}
	if p.hasTag && !ValidTag(p.tag) {
		return Ref{}, fmt.Errorf("image reference %s: tag %s: %w", clip.QuoteRef(s), clip.QuoteRef(p.tag), ErrInvalidReference)
	}
	repo, err := normalise(p.name)
	if err != nil {
		return Ref{}, fmt.Errorf("image reference %s: %w", clip.QuoteRef(s), err)
	}
	return Ref{Repository: repo, Tag: p.tag, Digest: p.digest}, nil
}

// ParseRepository validates a bare repository, without tag or digest, and
// returns it normalised: "nginx" gives "index.docker.io/library/nginx".
// Errors wrap [ErrInvalidReference] and name s.
func ParseRepository(s string) (string, error) {
	repo, err := normalise(s)
	if err != nil {
		return "", fmt.Errorf("repository %s: %w", clip.QuoteRef(s), err)
	}
	return repo, nil
}

// ValidTag reports whether t is a valid tag: 1 to 128 letters, digits,
// underscores, dots and dashes, not starting with a dot or dash.
func ValidTag(t string) bool {
	if len(t) == 0 || len(t) > maxTag {
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

// normalise validates a repository (registry host optional) and returns
// its full name: the registry defaults to [DefaultRegistry] ("docker.io"
// means it too), where a one-component path gains "library/". The first
// component is the registry when it is "localhost" or holds a ".", ":" or
// "[", as go-containerregistry and the Docker CLI decide.
func normalise(s string) (string, error) {
	host, path := "", s
	if i := strings.IndexByte(s, '/'); i >= 0 {
		first := s[:i]
		if first == "localhost" || strings.ContainsAny(first, ".:[") {
			host, path = first, s[i+1:]
		}
	}
	if host != "" && !validHost(host) {
		return "", fmt.Errorf("registry host %s: %w", clip.QuoteRef(host), ErrInvalidReference)
	}
	if !validPath(path) {
		return "", fmt.Errorf("repository path %s: %w", clip.QuoteRef(path), ErrInvalidReference)
	}
	if host == "" || host == "docker.io" {
		host = DefaultRegistry
	}
	if host == DefaultRegistry && strings.IndexByte(path, '/') < 0 {
		path = "library/" + path
	}
	return host + "/" + path, nil
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
// joined by ".", "_", "__" or runs of "-", at most 255 bytes in all.
func validPath(p string) bool {
	if p == "" || len(p) > maxPath {
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
