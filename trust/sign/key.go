// Package sign signs artifacts as cosign v3 does, with a key the operator
// gives: Sigstore bundles over in-toto statements (an image's signature,
// an attestation) attached to the image as OCI 1.1 referrers, and bundles
// over a file's bytes (cosign sign-blob --bundle). The real cosign CLI
// verifies both with the public key:
//
//	cosign verify --key cosign.pub --insecure-ignore-tlog IMAGE@DIGEST
//	cosign verify-blob --key cosign.pub --bundle FILE.sigstore.json --insecure-ignore-tlog FILE
//
// Nothing is written to a transparency log: a key-signed bundle carries
// the signature and the key's hint alone. Package trust is the checking
// side.
package sign

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"os"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// Key is a private signing key. It implements sigstore-go's
// sign.Keypair.
type Key struct {
	signer  crypto.Signer
	details signature.AlgorithmDetails
	hint    []byte
}

// LoadKey reads the private key at path: a key `cosign generate-key-pair`
// wrote (encrypted with password, as COSIGN_PASSWORD gives it), or an
// unencrypted PKCS#8, SEC 1 or PKCS#1 PEM key. ECDSA (P-256, P-384,
// P-521), RSA (2048, 3072, 4096 bits) and Ed25519 keys sign.
func LoadKey(path string, password []byte) (*Key, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the signing key: %w", err)
	}
	priv, err := cryptoutils.UnmarshalPEMToPrivateKey(data, cryptoutils.StaticPasswordFunc(password))
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w (a cosign key needs its password in COSIGN_PASSWORD)", path, err)
	}
	k, err := NewKey(priv)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	return k, nil
}

// NewKey wraps priv, which must be an *ecdsa.PrivateKey, *rsa.PrivateKey
// or ed25519.PrivateKey of a size LoadKey names.
func NewKey(priv crypto.PrivateKey) (*Key, error) {
	var alg protocommon.PublicKeyDetails
	switch p := priv.(type) {
	case *ecdsa.PrivateKey:
		alg = map[elliptic.Curve]protocommon.PublicKeyDetails{
			elliptic.P256(): protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256,
			elliptic.P384(): protocommon.PublicKeyDetails_PKIX_ECDSA_P384_SHA_384,
			elliptic.P521(): protocommon.PublicKeyDetails_PKIX_ECDSA_P521_SHA_512,
		}[p.Curve]
	case *rsa.PrivateKey:
		alg = map[int]protocommon.PublicKeyDetails{
			2048: protocommon.PublicKeyDetails_PKIX_RSA_PKCS1V15_2048_SHA256,
			3072: protocommon.PublicKeyDetails_PKIX_RSA_PKCS1V15_3072_SHA256,
			4096: protocommon.PublicKeyDetails_PKIX_RSA_PKCS1V15_4096_SHA256,
		}[p.N.BitLen()]
	case ed25519.PrivateKey:
		alg = protocommon.PublicKeyDetails_PKIX_ED25519
	}
	if alg == protocommon.PublicKeyDetails_PUBLIC_KEY_DETAILS_UNSPECIFIED {
		return nil, fmt.Errorf("a %T of this size cannot sign: want ECDSA P-256, P-384 or P-521, RSA 2048, 3072 or 4096, or Ed25519", priv)
	}
	details, err := signature.GetAlgorithmDetails(alg)
	if err != nil {
		return nil, err
	}
	signer := priv.(crypto.Signer)
	der, err := x509.MarshalPKIXPublicKey(signer.Public())
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(der)
	return &Key{signer: signer, details: details, hint: []byte(base64.StdEncoding.EncodeToString(sum[:]))}, nil
}

// PublicPEM is the public key, as cosign.pub holds it.
func (k *Key) PublicPEM() ([]byte, error) {
	return cryptoutils.MarshalPublicKeyToPEM(k.signer.Public())
}

// GetHashAlgorithm is the hash the signature is over.
func (k *Key) GetHashAlgorithm() protocommon.HashAlgorithm { return k.details.GetProtoHashType() }

// GetSigningAlgorithm is the key's algorithm.
func (k *Key) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	return k.details.GetSignatureAlgorithm()
}

// GetHint is the base64 SHA-256 of the public key's DER, which a bundle
// names the key by.
func (k *Key) GetHint() []byte { return k.hint }

// GetKeyAlgorithm is the key's type: ECDSA, RSA or ED25519.
func (k *Key) GetKeyAlgorithm() string {
	switch k.details.GetKeyType() {
	case signature.ECDSA:
		return "ECDSA"
	case signature.RSA:
		return "RSA"
	default:
		return "ED25519"
	}
}

// GetPublicKey is the public key.
func (k *Key) GetPublicKey() crypto.PublicKey { return k.signer.Public() }

// GetPublicKeyPem is PublicPEM as a string.
func (k *Key) GetPublicKeyPem() (string, error) {
	pem, err := k.PublicPEM()
	return string(pem), err
}

// SignData signs data: its digest for ECDSA and RSA, data itself for
// Ed25519. It returns the signature and what was signed.
func (k *Key) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	hf := k.details.GetHashType()
	signed := data
	if hf != crypto.Hash(0) {
		h := hf.New()
		h.Write(data)
		signed = h.Sum(nil)
	}
	sig, err := k.signer.Sign(rand.Reader, signed, hf)
	if err != nil {
		return nil, nil, fmt.Errorf("signing: %w", err)
	}
	return sig, signed, nil
}
