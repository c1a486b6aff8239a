package registry

import (
	"bytes"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/v1/types"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
)

// hostTransport refuses plain HTTP to hosts not allowed it, limits the
// requests in flight per host, and notes the credentials requests carry
// (see seenCredentials). It sits directly above the base transport,
// so it sees every request: pings, token exchanges, redirects, blobs.
type hostTransport struct {
	base      http.RoundTripper
	plainHTTP func(host string) bool
	limit     int
	seen      *seenCredentials

	mu    sync.Mutex
	slots map[string]chan struct{}
}

func newHostTransport(base http.RoundTripper, plainHTTP func(string) bool, limit int, seen *seenCredentials) *hostTransport {
	return &hostTransport{base: base, plainHTTP: plainHTTP, limit: limit, seen: seen, slots: map[string]chan struct{}{}}
}

// RoundTrip implements http.RoundTripper. The host's slot is held until the
// response body is closed or read to its end.
func (t *hostTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	host := strings.ToLower(req.URL.Host)
	if req.URL.Scheme == "http" && !t.plainHTTP(host) {
		return nil, fmt.Errorf("refusing plain HTTP to %s: only loopback and registries listed as insecure may use it", host)
	}
	if a := req.Header.Get("Authorization"); a != "" {
		t.seen.note(a)
	}
	logctx.From(req.Context()).Debug("registry request", "method", req.Method, "host", host, "path", req.URL.Path)
	slots := t.slotsFor(host)
	select {
	case slots <- struct{}{}:
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		<-slots
		return nil, err
	}
	if resp.Body == nil {
		<-slots
		return resp, nil
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: sync.OnceFunc(func() { <-slots })}
	return resp, nil
}

func (t *hostTransport) slotsFor(host string) chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.slots[host]
	if !ok {
		s = make(chan struct{}, t.limit)
		t.slots[host] = s
	}
	return s
}

// releasingBody gives a host slot back once the body is done with.
type releasingBody struct {
	io.ReadCloser
	release func()
}

func (b *releasingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.release()
	}
	return n, err
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

// verifyTransport bounds and checks every manifest fetched with GET. Its
// body, and a referrers list's, is refused over MaxManifestBytes. By
// digest, the body must hash to that digest; by tag, to the
// Docker-Content-Digest header when the registry sends one. A mismatch
// fails the request with ErrDigestMismatch.
//
// go-containerregistry checks manifests fetched by digest itself, but not
// those fetched by tag ("so many registries implement this incorrectly").
// The exception it makes is kept: signed schema 1 manifests, whose digest
// covers the payload without its signatures, are not checked against the
// header.
type verifyTransport struct {
	base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *verifyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK || (req.Method != "" && req.Method != http.MethodGet) {
		return resp, err
	}
	identifier, ok := manifestIdentifier(req.URL.Path)
	if !ok && !isReferrers(req.URL.Path) {
		return resp, nil
	}
	where := redact.URL(req.URL.String())
	if resp.ContentLength > MaxManifestBytes {
		resp.Body.Close()
		return nil, fmt.Errorf("manifest %s is %d bytes: %w of %d bytes", where, resp.ContentLength, ErrTooLarge, MaxManifestBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxManifestBytes+1))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading manifest %s: %w", where, err)
	}
	if len(body) > MaxManifestBytes {
		return nil, fmt.Errorf("manifest %s is larger than %d bytes: %w", where, MaxManifestBytes, ErrTooLarge)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if !ok {
		return resp, nil
	}
	want := identifier
	if !strings.Contains(identifier, ":") { // a tag
		want = resp.Header.Get("Docker-Content-Digest")
		if types.MediaType(resp.Header.Get("Content-Type")) == types.DockerManifestSchema1Signed {
			want = ""
		}
	}
	h := hasher(want)
	if h == nil {
		return resp, nil
	}
	h.Write(body)
	algorithm, _, _ := strings.Cut(want, ":")
	if got := algorithm + ":" + hex.EncodeToString(h.Sum(nil)); got != want {
		return nil, fmt.Errorf("%w: manifest %s hashes to %s, want %s", ErrDigestMismatch, where, got, want)
	}
	return resp, nil
}

// isReferrers reports whether path is the referrers API's,
// /v2/<name>/referrers/<digest>.
func isReferrers(path string) bool {
	return strings.HasPrefix(path, "/v2/") && strings.Contains(path, "/referrers/")
}

// manifestIdentifier returns the tag or digest of a /v2/<name>/manifests/<ref>
// path.
func manifestIdentifier(path string) (string, bool) {
	if !strings.HasPrefix(path, "/v2/") {
		return "", false
	}
	i := strings.LastIndex(path, "/manifests/")
	if i < 0 {
		return "", false
	}
	id := path[i+len("/manifests/"):]
	return id, id != "" && !strings.Contains(id, "/")
}

// hasher returns a hash for the digest's algorithm, or nil when the digest
// is empty or of an algorithm pinbot does not check.
func hasher(digest string) hash.Hash {
	algorithm, _, _ := strings.Cut(digest, ":")
	switch algorithm {
	case "sha256":
		return sha256.New()
	case "sha512":
		return sha512.New()
	}
	return nil
}
