package sign

import (
	"encoding/json"
	"fmt"
	"strings"

	sgsign "github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"
)

// Formats of what this package signs.
const (
	// BundleMediaType is a Sigstore bundle's, as cosign v3 attaches it.
	BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// InTotoPayload is a DSSE envelope's payload type for a statement.
	InTotoPayload = "application/vnd.in-toto+json"
	// StatementType is an in-toto statement's _type (v1).
	StatementType = "https://in-toto.io/Statement/v1"
	// CosignSign is the predicate type of cosign v3's signature of an
	// image: a statement with an empty predicate.
	CosignSign = "https://sigstore.dev/cosign/sign/v1"
)

// Statement is an in-toto statement (v1).
type Statement struct {
	Type          string          `json:"_type"`
	Subject       []Subject       `json:"subject"`
	PredicateType string          `json:"predicateType"`
	Predicate     json.RawMessage `json:"predicate"`
}

// Subject is one artifact a statement is about.
type Subject struct {
	Name   string            `json:"name,omitempty"`
	Digest map[string]string `json:"digest"`
}

// DigestSubject is the subject of an artifact by its digest,
// "sha256:<hex>", named name (which may be empty).
func DigestSubject(name, digest string) (Subject, error) {
	algo, hex, ok := strings.Cut(digest, ":")
	if !ok || algo == "" || hex == "" {
		return Subject{}, fmt.Errorf("digest %q: want ALGORITHM:HEX", digest)
	}
	return Subject{Name: name, Digest: map[string]string{algo: hex}}, nil
}

// NewStatement is the statement of predicate (nil: {}) of predicateType
// about subjects.
func NewStatement(predicateType string, predicate any, subjects ...Subject) ([]byte, error) {
	if predicate == nil {
		predicate = map[string]any{}
	}
	raw, err := json.Marshal(predicate)
	if err != nil {
		return nil, fmt.Errorf("encoding the %s predicate: %w", predicateType, err)
	}
	return json.Marshal(Statement{Type: StatementType, Subject: subjects, PredicateType: predicateType, Predicate: raw})
}

// Statement signs statement as a DSSE envelope and returns the Sigstore
// bundle's JSON, as cosign v3's sign and attest write it.
func (k *Key) Statement(statement []byte) ([]byte, error) {
	pb, err := sgsign.Bundle(&sgsign.DSSEData{Data: statement, PayloadType: InTotoPayload}, k, sgsign.BundleOptions{})
	if err != nil {
		return nil, fmt.Errorf("signing a statement: %w", err)
	}
	return protojson.Marshal(pb)
}

// Blob signs data and returns the Sigstore bundle's JSON, as cosign v3's
// sign-blob --bundle writes it.
func (k *Key) Blob(data []byte) ([]byte, error) {
	pb, err := sgsign.Bundle(&sgsign.PlainData{Data: data}, k, sgsign.BundleOptions{})
	if err != nil {
		return nil, fmt.Errorf("signing a file: %w", err)
	}
	return protojson.Marshal(pb)
}
