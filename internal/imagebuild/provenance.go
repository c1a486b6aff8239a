package imagebuild

import (
	"context"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"pinbot.dev/pinbot/trust/sign"
)

// The provenance's formats: an in-toto statement of SLSA provenance v1,
// attached to the image index as an OCI 1.1 referrer.
const (
	ProvenanceType     = "https://slsa.dev/provenance/v1"
	BuildType          = "https://pinbot.dev/release/v1"
	InTotoMediaType    = types.MediaType("application/vnd.in-toto+json")
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

// ImageSubject is the subject of the image ref.
func ImageSubject(ref name.Digest) sign.Subject {
	return sign.Subject{Name: ref.Context().Name(), Digest: map[string]string{"sha256": ref.DigestStr()[len("sha256:"):]}}
}

// Provenance returns the SLSA provenance statement of subjects, built as
// b says.
func Provenance(subjects []sign.Subject, b Build) ([]byte, error) {
	return sign.NewStatement(ProvenanceType, ProvenancePredicate(b), subjects...)
}

// ProvenancePredicate is the SLSA provenance v1 predicate of b.
func ProvenancePredicate(b Build) map[string]any {
	deps := []map[string]any{}
	if b.Revision != "" {
		dep := map[string]any{"digest": map[string]string{"gitCommit": b.Revision}}
		if b.Source != "" {
			dep["uri"] = "git+" + b.Source
		}
		deps = append(deps, dep)
	}
	return map[string]any{
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
	}
}

// Attach writes statement as an OCI 1.1 referrer of subject: an artifact
// manifest of type InTotoMediaType whose one layer is the statement. A
// registry without the Referrers API gets the tag schema's index
// (sha256-<hex>), as go-containerregistry writes it.
func Attach(ctx context.Context, subject name.Digest, statement []byte, opts ...remote.Option) (name.Digest, error) {
	return sign.Attach(ctx, subject, sign.Artifact{
		ArtifactType: string(InTotoMediaType),
		MediaType:    InTotoMediaType,
		Data:         statement,
		Annotations:  map[string]string{predicateTypeAnnot: ProvenanceType},
	}, opts...)
}
