package attest

import (
	"context"
	"strings"
	"sync"
	"time"

	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/proven"
)

// Attested is what a says, as the release chain's admission reads it.
func (a Answer) Attested() *proven.Attested {
	if !a.Passed {
		return &proven.Attested{Why: strings.Join(a.Why, "; ")}
	}
	p := a.Predicate
	return &proven.Attested{Passed: true, ProvenSince: p.ProvenSince, ProvenFor: time.Duration(p.ProvenFor), AttestedAt: p.AttestedAt, Signer: a.Signer}
}

// Read says what the attestations of image@digest signed by keys say of
// env: the longest-proven one that passes, or why none does. A registry
// that cannot be read says so, as why none passed.
func Read(ctx context.Context, reg trust.Registry, keys *trust.Keys, image, digest, env string) *proven.Attested {
	if keys == nil {
		return &proven.Attested{Why: "no keys to verify its attestations with"}
	}
	ans, err := Verify(ctx, reg, Query{Image: image, Digest: digest, Env: env, Keys: keys})
	if err != nil {
		return &proven.Attested{Why: "reading its attestations: " + redact.String(err.Error())}
	}
	return ans.Attested()
}

// ReadTTL is how long a Reader takes what the registry said as said.
const ReadTTL = 15 * time.Second

// maxRead bounds the answers a Reader keeps; past it, all are dropped.
const maxRead = 4096

// Reader is Read with its answers kept for ReadTTL: a gate that judges
// every open pull request at each step asks the registry at most that
// often per digest. The zero value is not usable; see NewReader.
type Reader struct {
	reg trust.Registry
	now func() time.Time

	mu   sync.Mutex
	seen map[readKey]readSeen
}

type readKey struct{ keys, env, image, digest string }

type readSeen struct {
	at time.Time
	a  *proven.Attested
}

// NewReader returns a Reader of reg.
func NewReader(reg trust.Registry) *Reader {
	return &Reader{reg: reg, now: time.Now, seen: map[readKey]readSeen{}}
}

// Read is the package's Read, or what it said less than ReadTTL ago.
func (r *Reader) Read(ctx context.Context, keys *trust.Keys, image, digest, env string) *proven.Attested {
	if keys == nil {
		return Read(ctx, r.reg, keys, image, digest, env)
	}
	k := readKey{keys: keys.String(), env: env, image: image, digest: digest}
	r.mu.Lock()
	if s, ok := r.seen[k]; ok && r.now().Sub(s.at) < ReadTTL {
		r.mu.Unlock()
		return s.a
	}
	r.mu.Unlock()
	a := Read(ctx, r.reg, keys, image, digest, env)
	r.mu.Lock()
	if len(r.seen) >= maxRead {
		clear(r.seen)
	}
	r.seen[k] = readSeen{at: r.now(), a: a}
	r.mu.Unlock()
	return a
}

// Forget drops what was read of image@digest: it was just attested.
func (r *Reader) Forget(image, digest string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.seen {
		if k.image == image && k.digest == digest {
			delete(r.seen, k)
		}
	}
}
