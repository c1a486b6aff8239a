// Package trusttest signs images for tests, as cosign v3 does: Sigstore
// bundles of in-toto statements (cosign's sign predicate for a
// signature, a predicate of its own for an attestation) attached as OCI
// 1.1 referrers, and the legacy sha256-<hex>.sig tag. Keys are generated
// with sigstore-go's signer; keyless signatures come from sigstore-go's
// virtual Sigstore (a test CA, timestamp authority and transparency log),
// whose trusted root TrustedRoot writes out.
package trusttest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"google.golang.org/protobuf/encoding/protojson"

	pinsign "pinbot.dev/pinbot/trust/sign"
)

// Media types and annotations of cosign v3's referrers.
const (
	BundleMediaType = pinsign.BundleMediaType
	CosignSign      = pinsign.CosignSign
	SLSAProvenance  = "https://slsa.dev/provenance/v1"
)

// Signer makes Sigstore bundles over in-toto statements.
type Signer interface {
	// Bundle signs statement and returns the bundle's JSON.
	Bundle(t testing.TB, statement []byte) []byte
}

// Key is a generated signing key, as `cosign generate-key-pair` makes one;
// it signs with package sign, as pinbot's releases and attestations do.
type Key struct {
	k *pinsign.Key
}

// Algorithms NewKey takes.
const (
	ECDSA   = "ecdsa"
	Ed25519 = "ed25519"
	RSA     = "rsa"
)

// NewKey generates a key of alg (ECDSA, Ed25519 or RSA).
func NewKey(t testing.TB, alg string) *Key {
	t.Helper()
	var (
		priv crypto.PrivateKey
		err  error
	)
	switch alg {
	case ECDSA:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case Ed25519:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	case RSA:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	default:
		t.Fatalf("no key algorithm %q", alg)
	}
	if err != nil {
		t.Fatalf("generating a %s key: %v", alg, err)
	}
	k, err := pinsign.NewKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return &Key{k: k}
}

// PublicPEM is the public key, as cosign.pub holds it.
func (k *Key) PublicPEM(t testing.TB) []byte {
	t.Helper()
	pem, err := k.k.PublicPEM()
	if err != nil {
		t.Fatal(err)
	}
	return pem
}

// Bundle implements Signer.
func (k *Key) Bundle(t testing.TB, statement []byte) []byte {
	t.Helper()
	b, err := k.k.Statement(statement)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// SignRaw signs data as a legacy cosign signature does.
func (k *Key) SignRaw(t testing.TB, data []byte) []byte {
	t.Helper()
	sig, _, err := k.k.SignData(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// Sigstore is a private Sigstore: a certificate authority issuing
// short-lived certificates to OIDC identities, a timestamp authority and
// a transparency log.
type Sigstore struct {
	vs *ca.VirtualSigstore
}

// NewSigstore starts a private Sigstore.
func NewSigstore(t testing.TB) *Sigstore {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	return &Sigstore{vs: vs}
}

// TrustedRoot is the Sigstore's trusted_root.json: its CA, timestamp
// authority and transparency log (it runs no certificate transparency
// log, as many private deployments do not).
func (s *Sigstore) TrustedRoot(t testing.TB) []byte {
	t.Helper()
	// The virtual log names itself by its ID's hex text; a trusted root
	// holds the ID's bytes.
	logs := s.vs.RekorLogs()
	for id, l := range logs {
		raw, err := hex.DecodeString(id)
		if err != nil {
			t.Fatal(err)
		}
		l.ID = raw
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, s.vs.FulcioCertificateAuthorities(), nil,
		s.vs.TimestampingAuthorities(), logs)
	if err != nil {
		t.Fatal(err)
	}
	data, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Identity is a signer holding a certificate for subject from issuer.
func (s *Sigstore) Identity(issuer, subject string) Signer {
	return keyless{vs: s.vs, issuer: issuer, subject: subject}
}

type keyless struct {
	vs              *ca.VirtualSigstore
	issuer, subject string
}

// Bundle implements Signer: a certificate, the DSSE envelope, the log
// entry with its inclusion proof, and a signed timestamp.
func (k keyless) Bundle(t testing.TB, statement []byte) []byte {
	t.Helper()
	// The certificate's validity starts when AttestAtTime issues it, a
	// moment after this call, in whole seconds. A log entry integrated at
	// time.Now() falls before it whenever a second ends in between, so
	// the entry is integrated a second later, well inside the ten minutes.
	e, err := k.vs.AttestAtTime(k.subject, k.issuer, statement, time.Now().Add(time.Second), true)
	if err != nil {
		t.Fatalf("signing as %s: %v", k.subject, err)
	}
	vc, err := e.VerificationContent()
	if err != nil {
		t.Fatal(err)
	}
	sc, err := e.SignatureContent()
	if err != nil {
		t.Fatal(err)
	}
	env := sc.(*bundle.Envelope).RawEnvelope()
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := e.TlogEntries()
	if err != nil {
		t.Fatal(err)
	}
	tle := entries[0].TransparencyLogEntry()
	tle.KindVersion = &protorekor.KindVersion{Kind: "dsse", Version: "0.0.1"}
	stamps, err := e.Timestamps()
	if err != nil {
		t.Fatal(err)
	}
	pb := &protobundle.Bundle{
		MediaType: BundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content:     &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: vc.Certificate().Raw}},
			TlogEntries: []*protorekor.TransparencyLogEntry{tle},
			TimestampVerificationData: &protobundle.TimestampVerificationData{
				Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: stamps[0]}},
			},
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload: payload, PayloadType: env.PayloadType,
			Signatures: []*protodsse.Signature{{Sig: sig, Keyid: env.Signatures[0].KeyID}},
		}},
	}
	return marshal(t, pb)
}

func marshal(t testing.TB, pb *protobundle.Bundle) []byte {
	t.Helper()
	data, err := protojson.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Statement is an in-toto statement over digest.
func Statement(t testing.TB, digest, predicateType string, predicate map[string]any) []byte {
	t.Helper()
	algo, hex, _ := strings.Cut(digest, ":")
	if predicate == nil {
		predicate = map[string]any{}
	}
	data, err := json.Marshal(map[string]any{
		"_type":         "https://in-toto.io/Statement/v1",
		"subject":       []any{map[string]any{"digest": map[string]string{algo: hex}}},
		"predicateType": predicateType,
		"predicate":     predicate,
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Build is what a SLSA provenance v1 predicate says of a build.
type Build struct {
	BuilderID, Repository, Ref, Commit, Invocation string
}

// Provenance is the SLSA provenance v1 predicate of b, as a CI's
// provenance generator writes it.
func Provenance(b Build) map[string]any {
	return map[string]any{
		"buildDefinition": map[string]any{
			"buildType":          "https://jenkins.example/pipeline/v1",
			"externalParameters": map[string]any{},
			"resolvedDependencies": []any{map[string]any{
				"uri":    "git+" + b.Repository + "@" + b.Ref,
				"digest": map[string]any{"gitCommit": b.Commit},
			}},
		},
		"runDetails": map[string]any{
			"builder":  map[string]any{"id": b.BuilderID},
			"metadata": map[string]any{"invocationID": b.Invocation},
		},
	}
}

// Sign attaches a signature of ref (repo@sha256:...) by s, as `cosign
// sign` v3 does.
func Sign(t testing.TB, ref string, s Signer, opts ...remote.Option) {
	t.Helper()
	d := digestOf(t, ref)
	Attach(t, ref, CosignSign, s.Bundle(t, Statement(t, d.DigestStr(), CosignSign, nil)), opts...)
}

// Attest attaches an attestation of ref by s, as `cosign attest` v3 does.
func Attest(t testing.TB, ref string, s Signer, predicateType string, predicate map[string]any, opts ...remote.Option) {
	t.Helper()
	d := digestOf(t, ref)
	Attach(t, ref, predicateType, s.Bundle(t, Statement(t, d.DigestStr(), predicateType, predicate)), opts...)
}

// Attach attaches a bundle to ref as an OCI 1.1 referrer: an artifact
// manifest of the bundle's media type whose subject is ref, with an
// empty config and the bundle as its one layer. On a registry without the
// Referrers API, go-containerregistry adds it to the fallback tag.
func Attach(t testing.TB, ref, predicateType string, bundleJSON []byte, opts ...remote.Option) {
	t.Helper()
	_, err := pinsign.Attach(context.Background(), digestOf(t, ref), pinsign.Artifact{
		ArtifactType: BundleMediaType,
		MediaType:    BundleMediaType,
		Data:         bundleJSON,
		Annotations: map[string]string{
			"dev.sigstore.bundle.content":       "dsse-envelope",
			"dev.sigstore.bundle.predicateType": predicateType,
		},
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
}

// LegacyPayload is cosign's simple signing payload for image@digest.
func LegacyPayload(t testing.TB, image, digest string) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{
		"critical": map[string]any{
			"identity": map[string]string{"docker-reference": image},
			"image":    map[string]string{"docker-manifest-digest": digest},
			"type":     "cosign container image signature",
		},
		"optional": nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// SignLegacy writes the legacy signature tag of ref, sha256-<hex>.sig,
// holding payload signed by k.
func SignLegacy(t testing.TB, ref string, k *Key, payload []byte, opts ...remote.Option) {
	t.Helper()
	d := digestOf(t, ref)
	config := static.NewLayer([]byte(`{"architecture":"","os":"","config":{},"rootfs":{"type":"layers","diff_ids":[]}}`), types.OCIConfigJSON)
	layer := static.NewLayer(payload, "application/vnd.dev.cosign.simplesigning.v1+json")
	for _, l := range []v1.Layer{config, layer} {
		if err := remote.WriteLayer(d.Context(), l, opts...); err != nil {
			t.Fatalf("uploading a blob: %v", err)
		}
	}
	ld := descriptor(t, layer, "application/vnd.dev.cosign.simplesigning.v1+json")
	ld.Annotations = map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(k.SignRaw(t, payload))}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        descriptor(t, config, types.OCIConfigJSON),
		Layers:        []v1.Descriptor{ld},
	}
	tag := d.Context().Tag(strings.Replace(d.DigestStr(), ":", "-", 1) + ".sig")
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(tag, rawManifest{raw, types.OCIManifestSchema1}, opts...); err != nil {
		t.Fatalf("writing %s: %v", tag, err)
	}
}

type rawManifest struct {
	raw       []byte
	mediaType types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.raw, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mediaType, nil }

func descriptor(t testing.TB, l v1.Layer, mt types.MediaType) v1.Descriptor {
	t.Helper()
	d, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	size, err := l.Size()
	if err != nil {
		t.Fatal(err)
	}
	return v1.Descriptor{MediaType: mt, Digest: d, Size: size}
}

func digestOf(t testing.TB, ref string) name.Digest {
	t.Helper()
	d, err := name.NewDigest(ref, name.Insecure)
	if err != nil {
		t.Fatalf("%s: want repo@sha256:...: %v", ref, err)
	}
	return d
}
