// Package policy is the signature policy's vocabulary: the rules by image
// that .pinbot.yaml and the reconciler's config spell under signatures:,
// their validation, and which rule names an image. Package trust loads
// and verifies with them; this package reads no file and speaks to no
// registry, so configs of every kind can hold a policy.
package policy

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"pinbot.dev/pinbot/trust/proven"
)

// Rules is the signature policy: rules by image, the first rule that
// names an image applies to it. It is the signatures: key of .pinbot.yaml
// (and of pinbot serve's config):
//
//	signatures:
//	  - images: ["gitea.example/acme/*"]   # globs of repositories; "*" stays within a path segment, a final "/**" takes the repository and every one below it
//	    keys: [keys/cosign.pub]            # cosign public keys (PEM: ECDSA, Ed25519 or RSA)
//	    trustedRoot: keys/trusted_root.json  # Sigstore's trusted root, for keyless
//	    keyless:                           # certificate identities; any one passes
//	      - issuer: https://token.actions.example
//	        subjectRegExp: https://gitea\.example/acme/.+
//	    attestations:                      # each is required
//	      - predicateType: https://slsa.dev/provenance/v1
//	        builderID: https://jenkins\.example/.*
//	        sourceRepository: https://gitea\.example/acme/app
//	        ref: refs/heads/main
//	      - predicateType: https://pinbot.dev/attestations/proven-running/v1
//	        keys: [keys/pinbot-attest.pub] # serve's attestation key, never the image keys
//	        environment: staging          # pinbot proved it running there
//	        minSoak: 24h                  # for at least this long
//
// Patterns (issuerRegExp, subjectRegExp, builderID, sourceRepository,
// ref) are regular expressions that must match the whole value.
type Rules []Rule

// Rule is one entry of Rules.
type Rule struct {
	// Images are globs of normalised repositories (registry/path).
	Images []string `yaml:"images" json:"images"`
	// Keys are paths of cosign public keys (PEM).
	Keys []string `yaml:"keys" json:"keys,omitempty"`
	// TrustedRoot is the path of a Sigstore trusted_root.json; needed
	// for Keyless.
	TrustedRoot string `yaml:"trustedRoot" json:"trustedRoot,omitempty"`
	// Keyless lists the certificate identities a keyless signature may
	// carry.
	Keyless []Identity `yaml:"keyless" json:"keyless,omitempty"`
	// Attestations are required on top of a signature.
	Attestations []Attestation `yaml:"attestations" json:"attestations,omitempty"`
}

// Identity is a keyless signer: the certificate's OIDC issuer and its
// subject (the SAN: an email, a URI), each exact or a pattern.
type Identity struct {
	// Issuer is the OIDC issuer, exactly.
	Issuer string `yaml:"issuer" json:"issuer,omitempty"`
	// IssuerRegExp is a pattern of the OIDC issuer.
	IssuerRegExp string `yaml:"issuerRegExp" json:"issuerRegExp,omitempty"`
	// Subject is the certificate's SAN (an email, a URI), exactly.
	Subject string `yaml:"subject" json:"subject,omitempty"`
	// SubjectRegExp is a pattern of the certificate's SAN.
	SubjectRegExp string `yaml:"subjectRegExp" json:"subjectRegExp,omitempty"`
}

// Attestation is a required in-toto attestation: its predicate type, and
// patterns over what its provenance says.
type Attestation struct {
	// PredicateType is the attestation's, such as
	// https://slsa.dev/provenance/v1.
	PredicateType string `yaml:"predicateType" json:"predicateType"`
	// BuilderID is a pattern over the builder that built the digest.
	BuilderID string `yaml:"builderID" json:"builderID,omitempty"`
	// SourceRepository is a pattern over the repository it was built
	// from.
	SourceRepository string `yaml:"sourceRepository" json:"sourceRepository,omitempty"`
	// Ref is a pattern over the Git ref it was built from,
	// refs/heads/main.
	Ref string `yaml:"ref" json:"ref,omitempty"`
	// Environment, for pinbot's proven-running attestation
	// (proven.PredicateType) and required with it, is the environment
	// the digest must have been proven running in.
	Environment string `yaml:"environment" json:"environment,omitempty"`
	// MinSoak, for pinbot's proven-running attestation, is how long it
	// must have stayed proven there.
	MinSoak time.Duration `yaml:"minSoak" json:"minSoak,omitempty"`
	// Keys are paths of the cosign public keys (PEM) that sign this
	// attestation, in place of the rule's: required for pinbot's
	// proven-running attestation, which serve's attestation key signs,
	// so that a key that signs images cannot vouch that one ran.
	Keys []string `yaml:"keys" json:"keys,omitempty"`
}

// Problem is one invalid field of Rules: Index of the rule, Path the
// keys below it (such as "keyless", 0, "issuer"), Msg what is wrong.
type Problem struct {
	Index int
	Path  []any
	Msg   string
}

// Validate lists what is wrong with p, in order; nil when nothing is.
func (p Rules) Validate() []Problem {
	var out []Problem
	add := func(i int, msg string, at ...any) { out = append(out, Problem{Index: i, Path: at, Msg: msg}) }
	for i, r := range p {
		if len(r.Images) == 0 {
			add(i, "a signature rule needs images")
		}
		for j, g := range r.Images {
			if err := checkImageGlob(g); err != nil {
				add(i, err.Error(), "images", j)
			}
		}
		if len(r.Keys) == 0 && len(r.Keyless) == 0 {
			add(i, "a signature rule needs keys or keyless identities: with neither, nothing could sign")
		}
		for j, k := range r.Keys {
			if err := checkFile(k); err != nil {
				add(i, "key "+err.Error(), "keys", j)
			}
		}
		if len(r.Keyless) > 0 && r.TrustedRoot == "" {
			add(i, "keyless identities need a trustedRoot (a Sigstore trusted_root.json) to check certificates against", "keyless")
		}
		if r.TrustedRoot != "" {
			if err := checkFile(r.TrustedRoot); err != nil {
				add(i, "trustedRoot "+err.Error(), "trustedRoot")
			}
		}
		for j, id := range r.Keyless {
			if (id.Issuer == "") == (id.IssuerRegExp == "") {
				add(i, "give issuer or issuerRegExp, one of them", "keyless", j)
			}
			if (id.Subject == "") == (id.SubjectRegExp == "") {
				add(i, "give subject or subjectRegExp, one of them", "keyless", j)
			}
			for _, f := range []struct{ key, v string }{{"issuerRegExp", id.IssuerRegExp}, {"subjectRegExp", id.SubjectRegExp}} {
				if _, err := Pattern(f.v); err != nil {
					add(i, err.Error(), "keyless", j, f.key)
				}
			}
		}
		for j, a := range r.Attestations {
			if a.PredicateType == "" {
				add(i, "an attestation needs a predicateType", "attestations", j)
			}
			switch {
			case a.PredicateType == proven.PredicateType && a.Environment == "":
				add(i, "pinbot's proven-running attestation needs the environment it must have been proven in", "attestations", j)
			case a.PredicateType == proven.PredicateType && len(a.Keys) == 0:
				add(i, "pinbot's proven-running attestation needs keys of its own (the public key of serve's attest.keyFile): the rule's keys sign images, and must not vouch that one ran", "attestations", j)
			case a.PredicateType != proven.PredicateType && (a.Environment != "" || a.MinSoak != 0):
				add(i, "environment and minSoak are what pinbot's proven-running attestation ("+proven.PredicateType+") states, not "+a.PredicateType, "attestations", j)
			case a.MinSoak < 0:
				add(i, "minSoak must not be negative", "attestations", j, "minSoak")
			}
			for k, file := range a.Keys {
				if err := checkFile(file); err != nil {
					add(i, "key "+err.Error(), "attestations", j, "keys", k)
				}
			}
			for _, f := range []struct{ key, v string }{{"builderID", a.BuilderID}, {"sourceRepository", a.SourceRepository}, {"ref", a.Ref}} {
				if _, err := Pattern(f.v); err != nil {
					add(i, err.Error(), "attestations", j, f.key)
				}
			}
		}
	}
	return out
}

// For returns the index of the rule that applies to image (a normalised
// repository), or -1 when none does.
func (p Rules) For(image string) int {
	for i, r := range p {
		for _, g := range r.Images {
			if matchImage(g, image) {
				return i
			}
		}
	}
	return -1
}

// checkImageGlob accepts a repository glob: path.Match syntax, with an
// optional final "/**".
func checkImageGlob(g string) error {
	if g == "" || strings.ContainsAny(g, " \t\n@") {
		return fmt.Errorf("image glob %q: want a repository such as registry.example/org/*", g)
	}
	if _, err := path.Match(strings.TrimSuffix(g, "/**"), ""); err != nil {
		return fmt.Errorf("image glob %q: %w", g, err)
	}
	return nil
}

func matchImage(glob, image string) bool {
	if prefix, ok := strings.CutSuffix(glob, "/**"); ok {
		if ok, _ := path.Match(prefix, image); ok {
			return true
		}
		for i := len(image) - 1; i > 0; i-- {
			if image[i] == '/' {
				if ok, _ := path.Match(prefix, image[:i]); ok {
					return true
				}
			}
		}
		return false
	}
	ok, _ := path.Match(glob, image)
	return ok
}

// checkFile accepts a slash path inside the repository.
func checkFile(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return fmt.Errorf("%q: want a path relative to the repository root", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." || seg == "" {
			return fmt.Errorf("%q: want a path inside the repository, without . or .. segments", p)
		}
	}
	return nil
}

// Pattern compiles a pattern anchored at both ends; "" compiles to nil.
func Pattern(pattern string) (*regexp.Regexp, error) {
	if pattern == "" {
		return nil, nil
	}
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		return nil, fmt.Errorf("pattern %q: %w", pattern, err)
	}
	return re, nil
}

// Error implements error: "signatures[0].keys[1]: ...".
func (p *Problem) Error() string {
	s := fmt.Sprintf("signatures[%d]", p.Index)
	for _, k := range p.Path {
		switch k := k.(type) {
		case int:
			s += fmt.Sprintf("[%d]", k)
		default:
			s += fmt.Sprintf(".%v", k)
		}
	}
	return s + ": " + p.Msg
}

// Provenance is what trust.Check learnt of a digest that passed: who signed it
// and how it was built. The zero value (Guarded false) means no rule
// names the image.
type Provenance struct {
	Guarded bool   `json:"guarded"`
	Rule    string `json:"rule,omitempty"`
	// Digest is the digest whose signature counted: the subject's own, or
	// the index's that covers it.
	Digest string `json:"digest,omitempty"`
	Format string `json:"format,omitempty"`
	// Signer is "key <file> (<fingerprint>)" or "issuer <iss>, subject <san>".
	Signer string `json:"signer,omitempty"`
	// SignedAt is the signature's verified time (a log's or a timestamp
	// authority's); zero for a key signature with neither.
	SignedAt     time.Time  `json:"signedAt,omitzero"`
	Attestations []Attested `json:"attestations,omitempty"`
}

// Attested is one attestation that passed, with the build facts its
// provenance states.
type Attested struct {
	PredicateType    string `json:"predicateType"`
	Signer           string `json:"signer"`
	BuilderID        string `json:"builderID,omitempty"`
	SourceRepository string `json:"sourceRepository,omitempty"`
	Ref              string `json:"ref,omitempty"`
	Commit           string `json:"commit,omitempty"`
	// Invocation names the build run (its URL or ID).
	Invocation string `json:"invocation,omitempty"`
	// Environment and ProvenFor are where and how long a pinbot
	// proven-running attestation says the digest ran.
	Environment string `json:"environment,omitempty"`
	ProvenFor   string `json:"provenFor,omitempty"`
}
