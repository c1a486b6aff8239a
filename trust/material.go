package trust

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"sync"
	"time"

	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"pinbot.dev/pinbot/trust/policy"
)

// maxFile bounds a key or trusted root file: they are kilobytes.
const maxFile = 1 << 20

// Verifier is a signature policy with its keys and trusted roots loaded: it checks
// digests (see Check). It remembers the digests that passed, since a
// digest's content never changes; a refusal is asked again. It is safe for
// concurrent use.
type Verifier struct {
	policy policy.Rules
	rules  []*rule

	mu     sync.Mutex
	passed map[string]policy.Provenance // "<rule>@<image>@<digest>"
}

// rule is a Rule ready to verify with.
type rule struct {
	index      int
	keys       []key
	root       *root.TrustedRoot
	identities []identity
	attest     []attestation
	// keyless verifies certificates from root; nil without keyless.
	keyless *verify.Verifier
}

type key struct {
	file string
	// verify verifies a signature by this key alone.
	verify      *verify.Verifier
	fingerprint string // SHA256:<hex of the DER public key>, shortened
	verifier    signature.Verifier
}

type identity struct {
	id verify.CertificateIdentity
}

type attestation struct {
	policy.Attestation
	builder, source, ref *regexp.Regexp
	// signers verify it: its own keys when it names any, else the rule.
	signers *rule
}

// Compile loads the keys and trusted roots p names from files (a Git
// snapshot, or a confined directory) and returns p's Verifier. An empty
// policy compiles to a Verifier that guards nothing. Errors are *policy.Problem
// values naming the rule and field.
func Compile(p policy.Rules, files fs.FS) (*Verifier, error) {
	if probs := p.Validate(); len(probs) > 0 {
		return nil, &probs[0]
	}
	v := &Verifier{policy: p, passed: map[string]policy.Provenance{}}
	for i, r := range p {
		c := &rule{index: i}
		for j, file := range r.Keys {
			k, err := loadKey(files, file)
			if err != nil {
				return nil, &policy.Problem{Index: i, Path: []any{"keys", j}, Msg: err.Error()}
			}
			c.keys = append(c.keys, k)
		}
		if r.TrustedRoot != "" {
			data, err := readFile(files, r.TrustedRoot)
			if err == nil {
				c.root, err = root.NewTrustedRootFromJSON(data)
			}
			if err != nil {
				return nil, &policy.Problem{Index: i, Path: []any{"trustedRoot"}, Msg: fmt.Sprintf("trusted root %s: %v", r.TrustedRoot, err)}
			}
		}
		for j, id := range r.Keyless {
			ci, err := certificateIdentity(id)
			if err != nil {
				return nil, &policy.Problem{Index: i, Path: []any{"keyless", j}, Msg: err.Error()}
			}
			c.identities = append(c.identities, identity{id: ci})
		}
		if len(c.identities) > 0 {
			var err error
			if c.keyless, err = keylessVerifier(c.root); err != nil {
				return nil, &policy.Problem{Index: i, Path: []any{"trustedRoot"}, Msg: "trusted root: " + err.Error()}
			}
		}
		for j, a := range r.Attestations {
			ca := attestation{Attestation: a, signers: c}
			ca.builder, _ = policy.Pattern(a.BuilderID) // Validate compiled them
			ca.source, _ = policy.Pattern(a.SourceRepository)
			ca.ref, _ = policy.Pattern(a.Ref)
			if len(a.Keys) > 0 {
				ca.signers = &rule{index: i}
				for k, file := range a.Keys {
					key, err := loadKey(files, file)
					if err != nil {
						return nil, &policy.Problem{Index: i, Path: []any{"attestations", j, "keys", k}, Msg: err.Error()}
					}
					ca.signers.keys = append(ca.signers.keys, key)
				}
			}
			c.attest = append(c.attest, ca)
		}
		v.rules = append(v.rules, c)
	}
	return v, nil
}

// Policy returns the policy v was compiled from.
func (v *Verifier) Policy() policy.Rules {
	if v == nil {
		return nil
	}
	return v.policy
}

func loadKey(files fs.FS, file string) (key, error) {
	data, err := readFile(files, file)
	if err != nil {
		return key{}, fmt.Errorf("key %s: %v", file, err)
	}
	return parseKey(file, data)
}

// parseKey reads a PEM public key, named file in errors and refusals.
func parseKey(file string, data []byte) (key, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(data)
	if err != nil {
		return key{}, fmt.Errorf("key %s: not a PEM public key: %v", file, err)
	}
	ver, err := signature.LoadDefaultVerifier(pub)
	if err != nil {
		return key{}, fmt.Errorf("key %s: %v", file, err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return key{}, fmt.Errorf("key %s: %v", file, err)
	}
	sum := sha256.Sum256(der)
	k := key{file: file, fingerprint: "SHA256:" + hex.EncodeToString(sum[:])[:16], verifier: ver}
	if k.verify, err = keyVerifier(k); err != nil {
		return key{}, fmt.Errorf("key %s: %w", file, err)
	}
	return k, nil
}

// readFile reads a regular file of files, at most maxFile bytes.
func readFile(files fs.FS, name string) ([]byte, error) {
	if files == nil {
		return nil, errors.New("no files to read it from")
	}
	f, err := files.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("larger than %d KiB", maxFile>>10)
	}
	return data, nil
}

func certificateIdentity(id policy.Identity) (verify.CertificateIdentity, error) {
	anchor := func(p string) string {
		if p == "" {
			return ""
		}
		return `^(?:` + p + `)$`
	}
	return verify.NewShortCertificateIdentity(id.Issuer, anchor(id.IssuerRegExp), id.Subject, anchor(id.SubjectRegExp))
}

// keyMaterial is trusted material holding one key, whatever hint a
// signature names, valid at any time.
func keyMaterial(k key) root.TrustedMaterial {
	ek := root.NewExpiringKey(k.verifier, time.Time{}, time.Time{})
	return root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return ek, nil })
}

// keyVerifier verifies a key signature: the key is the trust, and the
// time is now.
func keyVerifier(k key) (*verify.Verifier, error) {
	return verify.NewVerifier(keyMaterial(k), verify.WithCurrentTime())
}

// keylessVerifier verifies a certificate from r: it requires what r
// declares, a transparency log entry where r has logs, embedded
// certificate timestamps where it has CT logs, and one observer timestamp
// (the log's, or a timestamp authority's) to check the certificate at.
func keylessVerifier(r *root.TrustedRoot) (*verify.Verifier, error) {
	opts := []verify.VerifierOption{verify.WithObserverTimestamps(1)}
	if len(r.RekorLogs()) > 0 {
		opts = append(opts, verify.WithTransparencyLog(1))
	}
	if len(r.CTLogs()) > 0 {
		opts = append(opts, verify.WithSignedCertificateTimestamps(1))
	}
	return verify.NewVerifier(r, opts...)
}
