package trust

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"

	"google.golang.org/protobuf/encoding/protojson"

	"pinbot.dev/pinbot/trust/policy"
)

// Statement is an attestation attached to a digest that a key verified:
// who signed it, where it was found, and its predicate as JSON. Only a
// verified statement's predicate is read.
type Statement struct {
	Signer    string
	Where     string
	Predicate json.RawMessage
}

// Statements returns the attestations of predicateType attached to
// image@digest (OCI referrers, or the tag scheme's index) that one of
// keys (cosign public keys, PEM files read from files) verifies over
// digest, and, for the others of that type, why each failed.
func Statements(ctx context.Context, reg Registry, image, digest, predicateType string, keys []string, files fs.FS) (verified []Statement, failed []string, err error) {
	v, err := Compile(policy.Rules{{Images: []string{image}, Keys: keys}}, files)
	if err != nil {
		return nil, nil, err
	}
	r := v.rules[0]
	cands, err := find(ctx, reg, image, digest)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range cands {
		if c.predicateType != predicateType {
			continue
		}
		s, err := r.verify(c, digest)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %s", c.where, err))
			continue
		}
		if s.result == nil || s.result.Statement == nil {
			failed = append(failed, c.where+": it holds no in-toto statement")
			continue
		}
		pred, err := protojson.Marshal(s.result.Statement.GetPredicate())
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: its predicate: %s", c.where, err))
			continue
		}
		verified = append(verified, Statement{Signer: s.signer, Where: c.where, Predicate: pred})
	}
	return verified, failed, nil
}
