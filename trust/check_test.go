package trust_test

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/registry"
	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/policy"
	"pinbot.dev/pinbot/trust/trusttest"
)

// world is an in-memory registry with one image, signing keys, and a
// private Sigstore.
type world struct {
	reg    *registry.Client
	host   string
	image  string // normalised repository
	digest string
	key    *trusttest.Key
	other  *trusttest.Key
	store  *trusttest.Sigstore
	files  fstest.MapFS
}

func newWorld(t *testing.T, referrersAPI bool) *world {
	t.Helper()
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.WithReferrersSupport(referrersAPI), ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	w := &world{host: host, image: host + "/acme/app", key: trusttest.NewKey(t, trusttest.ECDSA), other: trusttest.NewKey(t, trusttest.ECDSA), store: trusttest.NewSigstore(t)}
	w.digest = w.push(t, "v1")
	reg, err := registry.New()
	if err != nil {
		t.Fatal(err)
	}
	w.reg = reg
	w.files = fstest.MapFS{
		"keys/cosign.pub":        {Data: w.key.PublicPEM(t)},
		"keys/trusted_root.json": {Data: w.store.TrustedRoot(t)},
		"keys/not-a-key.pub":     {Data: []byte("hello")},
	}
	return w
}

// push pushes a random image as image:tag and returns its digest.
func (w *world) push(t *testing.T, tag string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	return w.write(t, tag, img)
}

func (w *world) write(t *testing.T, tag string, img v1.Image) string {
	t.Helper()
	ref, err := name.ParseReference(w.image+":"+tag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func (w *world) ref(digest string) string { return w.image + "@" + digest }

func (w *world) verifier(t *testing.T, p policy.Rules) *trust.Verifier {
	t.Helper()
	v, err := trust.Compile(p, w.files)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return v
}

func (w *world) check(t *testing.T, p policy.Rules, s trust.Subject) (policy.Provenance, error) {
	t.Helper()
	if s.Image == "" {
		s.Image = w.image
	}
	if s.Digest == "" {
		s.Digest = w.digest
	}
	return w.verifier(t, p).Check(context.Background(), w.reg, s)
}

func keyRule(w *world) policy.Rules {
	return policy.Rules{{Images: []string{w.host + "/acme/*"}, Keys: []string{"keys/cosign.pub"}}}
}

func keylessRule(w *world, subjectRegExp string) policy.Rules {
	return policy.Rules{{
		Images:      []string{w.host + "/acme/**"},
		TrustedRoot: "keys/trusted_root.json",
		Keyless:     []policy.Identity{{Issuer: "https://ci.example", SubjectRegExp: subjectRegExp}},
	}}
}

func TestKeySignatures(t *testing.T) {
	for _, tc := range []struct {
		name         string
		referrersAPI bool
		alg          string
	}{
		{"ecdsa, referrers API", true, trusttest.ECDSA},
		{"ecdsa, referrers tag fallback", false, trusttest.ECDSA},
		{"ed25519", true, trusttest.Ed25519},
		{"rsa", false, trusttest.RSA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.referrersAPI)
			k := trusttest.NewKey(t, tc.alg)
			w.files["keys/cosign.pub"] = &fstest.MapFile{Data: k.PublicPEM(t)}
			trusttest.Sign(t, w.ref(w.digest), k)
			p, err := w.check(t, keyRule(w), trust.Subject{})
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if !p.Guarded || p.Format != trust.FormatBundle || !strings.HasPrefix(p.Signer, "key keys/cosign.pub (SHA256:") || p.Digest != w.digest {
				t.Errorf("provenance = %+v", p)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	w := newWorld(t, true)
	unsigned := w.push(t, "unsigned")
	byOther := w.push(t, "other-key")
	trusttest.Sign(t, w.ref(byOther), w.other)
	// A signature made for one digest, copied onto another.
	copied := w.push(t, "copied")
	trusttest.Attach(t, w.ref(copied), trusttest.CosignSign, w.key.Bundle(t, trusttest.Statement(t, w.digest, trusttest.CosignSign, nil)))
	legacyOther := w.push(t, "legacy-other")
	trusttest.SignLegacy(t, w.ref(legacyOther), w.key, trusttest.LegacyPayload(t, w.image, w.digest))

	for _, tc := range []struct {
		name, digest, reason string
	}{
		{"unsigned", unsigned, "no signature found"},
		{"signed by another key", byOther, "no signature verifies"},
		{"a signature for another digest", copied, "no signature verifies"},
		{"a legacy signature for another digest", legacyOther, "signs \"" + w.digest + "\", not this digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := w.check(t, keyRule(w), trust.Subject{Digest: tc.digest})
			var r *trust.Refusal
			if !errors.As(err, &r) || !errors.Is(err, trust.ErrRefused) {
				t.Fatalf("Check = %v, want a Refusal", err)
			}
			if r.Rule != "signatures[0]" || r.Digest != tc.digest || r.Image != w.image || !strings.Contains(r.Reason, tc.reason) {
				t.Errorf("refusal = %+v, want rule signatures[0] and a reason with %q", r, tc.reason)
			}
		})
	}
}

func TestLegacySignatureTag(t *testing.T) {
	w := newWorld(t, false)
	trusttest.SignLegacy(t, w.ref(w.digest), w.key, trusttest.LegacyPayload(t, w.image, w.digest))
	p, err := w.check(t, keyRule(w), trust.Subject{})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if p.Format != trust.FormatLegacy || !strings.Contains(p.Signer, "keys/cosign.pub") {
		t.Errorf("provenance = %+v", p)
	}
}

func TestKeyless(t *testing.T) {
	w := newWorld(t, true)
	trusttest.Sign(t, w.ref(w.digest), w.store.Identity("https://ci.example", "builder@acme.example"))
	p, err := w.check(t, keylessRule(w, `.*@acme\.example`), trust.Subject{})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if p.Signer != "issuer https://ci.example, subject builder@acme.example" || p.SignedAt.IsZero() {
		t.Errorf("provenance = %+v", p)
	}
	_, err = w.check(t, keylessRule(w, `.*@other\.example`), trust.Subject{})
	var r *trust.Refusal
	if !errors.As(err, &r) || !strings.Contains(r.Reason, "no signature verifies") {
		t.Fatalf("Check with another subject = %v, want a refusal", err)
	}
	// The subject pattern matches the whole subject, not a part of it.
	if _, err := w.check(t, keylessRule(w, `builder`), trust.Subject{}); !errors.Is(err, trust.ErrRefused) {
		t.Errorf("a pattern matching part of the subject: Check = %v, want a refusal", err)
	}
}

func TestAttestations(t *testing.T) {
	w := newWorld(t, true)
	signer := w.store.Identity("https://ci.example", "builder@acme.example")
	trusttest.Sign(t, w.ref(w.digest), signer)
	build := trusttest.Build{BuilderID: "https://jenkins.acme.example/job/app", Repository: "https://gitea.acme.example/acme/app",
		Ref: "refs/heads/main", Commit: "0123456789abcdef0123456789abcdef01234567", Invocation: "https://jenkins.acme.example/job/app/42"}
	trusttest.Attest(t, w.ref(w.digest), signer, trusttest.SLSAProvenance, trusttest.Provenance(build))

	rules := func(source string) policy.Rules {
		p := keylessRule(w, `.*@acme\.example`)
		p[0].Attestations = []policy.Attestation{{PredicateType: trusttest.SLSAProvenance, BuilderID: `https://jenkins\.acme\.example/.*`, SourceRepository: source, Ref: "refs/heads/main"}}
		return p
	}
	p, err := w.check(t, rules(`https://gitea\.acme\.example/acme/app`), trust.Subject{})
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	want := []policy.Attested{{PredicateType: trusttest.SLSAProvenance, Signer: "issuer https://ci.example, subject builder@acme.example",
		BuilderID: build.BuilderID, SourceRepository: build.Repository, Ref: build.Ref, Commit: build.Commit, Invocation: build.Invocation}}
	if diff := cmp.Diff(want, p.Attestations); diff != "" {
		t.Errorf("attestations (-want +got):\n%s", diff)
	}

	_, err = w.check(t, rules(`https://gitea\.acme\.example/acme/other`), trust.Subject{})
	var r *trust.Refusal
	if !errors.As(err, &r) || r.Rule != "signatures[0].attestations[0]" || !strings.Contains(r.Reason, `source repository "https://gitea.acme.example/acme/app" does not match`) {
		t.Fatalf("Check with another source repository = %v, want a refusal of signatures[0].attestations[0]", err)
	}

	bare := w.push(t, "no-attestation")
	trusttest.Sign(t, w.ref(bare), signer)
	_, err = w.check(t, rules(`.*`), trust.Subject{Digest: bare})
	if !errors.As(err, &r) || !strings.Contains(r.Reason, "no attestation of predicate type "+trusttest.SLSAProvenance+" is attached") {
		t.Fatalf("Check without an attestation = %v, want a refusal", err)
	}
}

func TestIndexCoversChildren(t *testing.T) {
	w := newWorld(t, false)
	idx, err := random.Index(128, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(w.image+":multi", name.Insecure)
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	id, _ := idx.Digest()
	m, _ := idx.IndexManifest()
	child := m.Manifests[0].Digest.String()
	trusttest.Sign(t, w.ref(id.String()), w.key)

	p, err := w.check(t, keyRule(w), trust.Subject{Digest: child, Indexes: []string{id.String()}})
	if err != nil {
		t.Fatalf("Check of a child of a signed index: %v", err)
	}
	if p.Digest != id.String() {
		t.Errorf("the signature counted is %s's, want the index's", p.Digest)
	}
	// An index signed by another key: the refusal names the index and
	// why it failed, not only that the platform image is unsigned.
	other := trusttest.NewKey(t, trusttest.ECDSA)
	idx2, _ := random.Index(128, 1, 2)
	ref2, _ := name.ParseReference(w.image+":multi2", name.Insecure)
	if err := remote.WriteIndex(ref2, idx2); err != nil {
		t.Fatal(err)
	}
	id2, _ := idx2.Digest()
	m2, _ := idx2.IndexManifest()
	trusttest.Sign(t, w.ref(id2.String()), other)
	_, err = w.check(t, keyRule(w), trust.Subject{Digest: m2.Manifests[0].Digest.String(), Indexes: []string{id2.String()}})
	var r *trust.Refusal
	if !errors.As(err, &r) || !strings.Contains(r.Reason, "the index "+imageref.Short(id2.String())+": no signature verifies") || r.Digest != m2.Manifests[0].Digest.String() {
		t.Errorf("Check of a child of an index signed by another key = %v, want a refusal naming the index's failure", err)
	}
	// An index that does not list the digest covers nothing.
	if _, err := w.check(t, keyRule(w), trust.Subject{Indexes: []string{id.String()}}); !errors.Is(err, trust.ErrRefused) {
		t.Errorf("Check of a digest the index does not list = %v, want a refusal", err)
	}
}

func TestUnguardedImage(t *testing.T) {
	w := newWorld(t, true)
	p, err := w.check(t, policy.Rules{{Images: []string{"elsewhere.example/*"}, Keys: []string{"keys/cosign.pub"}}}, trust.Subject{})
	if err != nil || p.Guarded {
		t.Errorf("Check of an image no rule names = %+v, %v; want unguarded", p, err)
	}
}

func TestCompileErrors(t *testing.T) {
	files := fstest.MapFS{"keys/bad.pub": {Data: []byte("hello")}}
	for _, tc := range []struct {
		name   string
		policy policy.Rules
		want   string
	}{
		{"no signer", policy.Rules{{Images: []string{"r.example/*"}}}, "signatures[0]: a signature rule needs keys or keyless"},
		{"no images", policy.Rules{{Keys: []string{"keys/bad.pub"}}}, "signatures[0]: a signature rule needs images"},
		{"key outside", policy.Rules{{Images: []string{"r.example/*"}, Keys: []string{"../k.pub"}}}, "signatures[0].keys[0]: key \"../k.pub\""},
		{"missing key", policy.Rules{{Images: []string{"r.example/*"}, Keys: []string{"keys/none.pub"}}}, "signatures[0].keys[0]: key keys/none.pub:"},
		{"not a key", policy.Rules{{Images: []string{"r.example/*"}, Keys: []string{"keys/bad.pub"}}}, "signatures[0].keys[0]: key keys/bad.pub: not a PEM public key"},
		{"keyless without root", policy.Rules{{Images: []string{"r.example/*"}, Keyless: []policy.Identity{{Issuer: "i", Subject: "s"}}}}, "signatures[0].keyless: keyless identities need a trustedRoot"},
		{"bad pattern", policy.Rules{{Images: []string{"r.example/*"}, Keys: []string{"keys/bad.pub"}, Attestations: []policy.Attestation{{PredicateType: "p", Ref: "("}}}}, "signatures[0].attestations[0].ref: pattern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trust.Compile(tc.policy, files)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Compile = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
