package trust

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
)

// Statement is an attestation attached to a digest that a key verified:
// who signed it, where it was found, and its predicate as JSON. Only a
// verified statement's predicate is read.
type Statement struct {
	Signer    string
	Where     string
	Predicate json.RawMessage
}

// Keys are cosign public keys, loaded once, that statements are verified
// with.
type Keys struct {
	r *rule
}

// LoadKeys reads the cosign public keys (PEM files) named by files'
// paths.
func LoadKeys(keys []string, files fs.FS) (*Keys, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("no keys to verify attestations with")
	}
	k := &Keys{r: &rule{}}
	for _, file := range keys {
		key, err := loadKey(files, file)
		if err != nil {
			return nil, err
		}
		k.r.keys = append(k.r.keys, key)
	}
	return k, nil
}

// KeyOf is the one PEM public key pem, called name in refusals: a
// signer's own key, to read back what it signed.
func KeyOf(name string, pem []byte) (*Keys, error) {
	k, err := parseKey(name, pem)
	if err != nil {
		return nil, err
	}
	return &Keys{r: &rule{keys: []key{k}}}, nil
}

// String names the keys by their fingerprints: two Keys of the same
// keys name the same.
func (k *Keys) String() string {
	fps := make([]string, 0, len(k.r.keys))
	for _, key := range k.r.keys {
		fps = append(fps, key.fingerprint)
	}
	slices.Sort(fps)
	return strings.Join(fps, ",")
}

// Statements returns the attestations of predicateType attached to
// image@digest (OCI referrers, or the tag scheme's index) that one of k
// verifies over digest, and, for the others of that type, why each
// failed.
func (k *Keys) Statements(ctx context.Context, reg Registry, image, digest, predicateType string) (verified []Statement, failed []string, err error) {
	cands, err := find(ctx, reg, image, digest)
	if err != nil {
		return nil, nil, err
	}
	verified, failed = k.r.statements(cands, digest, predicateType)
	return verified, failed, nil
}

// statements verifies the candidates of predicateType with r's signers.
func (r *rule) statements(cands []candidate, digest, predicateType string) (verified []Statement, failed []string) {
	for _, c := range cands {
		if c.predicateType != predicateType {
			continue
		}
		s, err := r.verify(c, digest)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %s", c.where, err))
			continue
		}
		pred, err := s.predicate()
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %s", c.where, err))
			continue
		}
		verified = append(verified, Statement{Signer: s.signer, Where: c.where, Predicate: pred})
	}
	return verified, failed
}

// predicate is the verified statement's predicate, as JSON.
func (s signed) predicate() (json.RawMessage, error) {
	if s.result == nil || s.result.Statement == nil {
		return nil, errors.New("it holds no in-toto statement")
	}
	pred, err := protojson.Marshal(s.result.Statement.GetPredicate())
	if err != nil {
		return nil, fmt.Errorf("its predicate: %w", err)
	}
	return pred, nil
}
