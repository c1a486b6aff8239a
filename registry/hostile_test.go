package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"pinbot.dev/pinbot/internal/imageref"
)

// hostileRegistry serves one tag, team/app:v1, as the index body; every
// other manifest it is asked for is one small image manifest.
type hostileRegistry struct {
	body          []byte
	digest        string
	contentLength bool

	requests atomic.Int64
	inFlight atomic.Int64
	peak     atomic.Int64
	sent     atomic.Int64 // bytes of index body written
}

func newHostileRegistry(t *testing.T, index func(w *bytes.Buffer), contentLength bool) (*hostileRegistry, string) {
	var body bytes.Buffer
	index(&body)
	sum := sha256.Sum256(body.Bytes())
	h := &hostileRegistry{body: body.Bytes(), digest: "sha256:" + hex.EncodeToString(sum[:]), contentLength: contentLength}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, strings.TrimPrefix(srv.URL, "http://") + "/team/app:v1"
}

func (h *hostileRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.requests.Add(1)
	n := h.inFlight.Add(1)
	defer h.inFlight.Add(-1)
	for p := h.peak.Load(); n > p && !h.peak.CompareAndSwap(p, n); p = h.peak.Load() {
	}
	switch {
	case r.URL.Path == "/v2/":
		w.WriteHeader(http.StatusOK)
	case r.URL.Path == "/v2/team/app/manifests/v1" || r.URL.Path == "/v2/team/app/manifests/"+h.digest:
		w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
		w.Header().Set("Docker-Content-Digest", h.digest)
		if h.contentLength {
			w.Header().Set("Content-Length", strconv.Itoa(len(h.body)))
		}
		if r.Method == http.MethodHead {
			return
		}
		// Written in pieces, as a registry streams: a client that stops
		// reading stops the writes.
		for b := h.body; len(b) > 0; {
			k := min(len(b), 64<<10)
			m, err := w.Write(b[:k])
			h.sent.Add(int64(m))
			if err != nil {
				return
			}
			b = b[k:]
		}
	case strings.HasPrefix(r.URL.Path, "/v2/team/app/manifests/sha256:"):
		// A child.
		m := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[]}`)
		sum := sha256.Sum256(m)
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Docker-Content-Digest", "sha256:"+hex.EncodeToString(sum[:]))
		w.Write(m)
	default:
		http.NotFound(w, r)
	}
}

// indexOf writes an index of n image entries of one platform each, each
// padded with an annotation of pad bytes.
func indexOf(n, pad int, childDigest func(i int) string) func(w *bytes.Buffer) {
	return func(w *bytes.Buffer) {
		w.WriteString(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[`)
		filler := strings.Repeat("x", pad)
		for i := range n {
			if i > 0 {
				w.WriteByte(',')
			}
			fmt.Fprintf(w, `{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":%q,"size":250,"platform":{"os":"linux","architecture":"arch%d"},"annotations":{"pad":%q}}`, childDigest(i), i, filler)
		}
		w.WriteString(`]}`)
	}
}

func fakeDigest(i int) string {
	sum := sha256.Sum256([]byte(strconv.Itoa(i)))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TestHostileIndexIsRefused checks that an index over pinbot's bounds is
// refused with ErrTooLarge, whether the registry announces its length or
// streams it, before much of it is read or allocated, and that no child is
// fetched: a 99 MB index once cost 6.9 GB and 130 s.
func TestHostileIndexIsRefused(t *testing.T) {
	isolateDockerConfig(t, "")
	huge := indexOf(99_000, 900, fakeDigest) // about 99 MB
	cases := []struct {
		name          string
		index         func(*bytes.Buffer)
		contentLength bool
		maxSent       int64
	}{
		{name: "99 MB with a Content-Length", index: huge, contentLength: true, maxSent: 8 << 20},
		{name: "99 MB streamed", index: huge, maxSent: 16 << 20},
		{name: "3,000 children", index: indexOf(3000, 0, fakeDigest), contentLength: true, maxSent: 4 << 20},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, ref := newHostileRegistry(t, tc.index, tc.contentLength)
			c := newClient(t)

			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := c.Describe(t.Context(), ref)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Describe: %v, want ErrTooLarge", err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("Describe allocated %d MiB refusing the index, want under 64 MiB", alloc>>20)
			}
			if got := h.requests.Load(); got > 4 {
				t.Errorf("%d requests, want the ping, the tag and the index at most (no child)", got)
			}
			if sent := h.sent.Load(); sent > tc.maxSent {
				t.Errorf("the registry got to send %d bytes, want at most %d", sent, tc.maxSent)
			}
			_, err = c.ChildFor(t.Context(), ref, imageref.Platform{OS: "linux", Architecture: "arch1"})
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("ChildFor: %v, want ErrTooLarge", err)
			}
		})
	}
}

// TestIndexChildrenAreReadAFewAtATime checks that Describe reads an
// index's children with a small fixed concurrency, not one goroutine and
// one request each at once.
func TestIndexChildrenAreReadAFewAtATime(t *testing.T) {
	isolateDockerConfig(t, "")
	var mu sync.Mutex
	children := map[int]string{}
	child := func(i int) string {
		mu.Lock()
		defer mu.Unlock()
		// Every entry names the one child manifest the server serves, so
		// digests verify; platforms differ.
		if d, ok := children[0]; ok {
			return d
		}
		m := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[]}`)
		sum := sha256.Sum256(m)
		children[0] = "sha256:" + hex.EncodeToString(sum[:])
		return children[0]
	}
	h, ref := newHostileRegistry(t, indexOf(MaxIndexEntries, 0, child), true)
	c := newClient(t)
	img, err := c.Describe(t.Context(), ref)
	if err != nil {
		t.Fatalf("Describe: %s", err)
	}
	if len(img.Children) != MaxIndexEntries {
		t.Errorf("%d children, want %d", len(img.Children), MaxIndexEntries)
	}
	if peak := h.peak.Load(); peak > childReads {
		t.Errorf("%d requests in flight at once, want at most %d", peak, childReads)
	}
}
