package imagebuild

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"pinbot.dev/pinbot/internal/redact"
)

// The provenance's formats: an in-toto statement of SLSA provenance v1,
// attached to the image index as an OCI 1.1 referrer.
const (
	StatementType      = "https://in-toto.io/Statement/v1"
	ProvenanceType     = "https://slsa.dev/provenance/v1"
	BuildType          = "https://pinbot.dev/release/v1"
	InTotoMediaType    = types.MediaType("application/vnd.in-toto+json")
	emptyMediaType     = types.MediaType("application/vnd.oci.empty.v1+json")
	predicateTypeAnnot = "in-toto.io/predicate-type"
)

// Build is what a provenance says of one build.
type Build struct {
	// Command is how the build was run, such as "make release VERSION=v0.3.0".
	Command string
	// Version, Revision and Source are the release's version, the commit
	// built and the repository's URL.
	Version, Revision, Source string
	// Builder names who built: the machine or CI job.
	Builder string
	// GoVersion is the go command's version.
	GoVersion string
	// Started and Finished bound the build.
	Started, Finished time.Time
	// Binaries are the release's files with their SHA-256, by name.
	Binaries map[string]string
}

// Statement is an in-toto statement (v1).
type Statement struct {
	Type          string          `json:"_type"`
	Subject       []Subject       `json:"subject"`
	PredicateType string          `json:"predicateType"`
	Predicate     json.RawMessage `json:"predicate"`
}

// Subject is one artifact a statement is about.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// ImageSubject is the subject of the image ref.
func ImageSubject(ref name.Digest) Subject {
	return Subject{Name: ref.Context().Name(), Digest: map[string]string{"sha256": ref.DigestStr()[len("sha256:"):]}}
}

// Provenance returns the SLSA provenance statement of subjects, built as
// b says.
func Provenance(subjects []Subject, b Build) ([]byte, error) {
	deps := []map[string]any{}
	if b.Revision != "" {
		dep := map[string]any{"digest": map[string]string{"gitCommit": b.Revision}}
		if b.Source != "" {
			dep["uri"] = "git+" + b.Source
		}
		deps = append(deps, dep)
	}
	predicate, err := json.Marshal(map[string]any{
		"buildDefinition": map[string]any{
			"buildType": BuildType,
			"externalParameters": map[string]any{
				"command": b.Command,
				"version": b.Version,
			},
			"internalParameters":   map[string]any{"goVersion": b.GoVersion, "binaries": b.Binaries},
			"resolvedDependencies": deps,
		},
		"runDetails": map[string]any{
			"builder": map[string]any{"id": b.Builder},
			"metadata": map[string]any{
				"startedOn":  b.Started.UTC().Format(time.RFC3339),
				"finishedOn": b.Finished.UTC().Format(time.RFC3339),
			},
		},
	})
	if err != nil {
		return nil, err
	}
	return json.Marshal(Statement{
		Type:          StatementType,
		Subject:       subjects,
		PredicateType: ProvenanceType,
		Predicate:     predicate,
	})
}

// Attach writes statement as an OCI 1.1 referrer of subject: an artifact
// manifest of type InTotoMediaType whose one layer is the statement. A
// registry without the Referrers API gets the tag schema's index
// (sha256-<hex>), as go-containerregistry writes it.
func Attach(ctx context.Context, subject name.Digest, statement []byte, opts ...remote.Option) (name.Digest, error) {
	opts = append(opts, remote.WithContext(ctx))
	desc, err := remote.Head(subject, opts...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("reading the subject %s: %w", subject, redact.Error(err))
	}
	config := static.NewLayer([]byte("{}"), emptyMediaType)
	layer := static.NewLayer(statement, InTotoMediaType)
	var descs []v1.Descriptor
	for _, l := range []v1.Layer{config, layer} {
		if err := remote.WriteLayer(subject.Context(), l, opts...); err != nil {
			return name.Digest{}, fmt.Errorf("uploading the provenance: %w", redact.Error(err))
		}
		d, _ := l.Digest()
		size, _ := l.Size()
		mt, _ := l.MediaType()
		descs = append(descs, v1.Descriptor{MediaType: mt, Digest: d, Size: size})
	}
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  string(InTotoMediaType),
		Config:        descs[0],
		Layers:        descs[1:],
		Subject:       &v1.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size},
		Annotations:   map[string]string{predicateTypeAnnot: ProvenanceType},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return name.Digest{}, err
	}
	h, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return name.Digest{}, err
	}
	ref := subject.Context().Digest(h.String())
	if err := remote.Put(ref, rawManifest{raw, m.MediaType}, opts...); err != nil {
		return name.Digest{}, fmt.Errorf("writing the provenance of %s: %w", subject, redact.Error(err))
	}
	return ref, nil
}

type rawManifest struct {
	raw       []byte
	mediaType types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.raw, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mediaType, nil }
