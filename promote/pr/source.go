package pr

// Source says where a promoted digest came from. It is shown in the pull
// request and kept in its hidden block.
type Source string

// The sources of a digest.
const (
	// SourceDigestFile is Kaniko's --digest-file: just "sha256:...".
	SourceDigestFile Source = "digest-file"
	// SourceImageNameFile is Kaniko's --image-name-with-digest-file:
	// "repo@sha256:..." (or "repo:tag@sha256:...").
	SourceImageNameFile Source = "image-name-with-digest-file"
	// SourceBuildxMetadata is buildx's --metadata-file JSON.
	SourceBuildxMetadata Source = "buildx-metadata"
	// SourceFlag is a digest given on the command line (--digest).
	SourceFlag Source = "flag"
	// SourceRegistry is a tag looked up in the registry at promotion time.
	SourceRegistry Source = "registry"
	// SourceDrift is a tracked tag that moved, found by Drift.
	SourceDrift Source = "drift"
	// SourceProof is a digest proven upstream, moved onward by serve.
	SourceProof Source = "proof"
	// SourceRollback is the last proven digest, restored by serve after
	// a failed proof.
	SourceRollback Source = "rollback"
)

// Describe is a human phrase for the pull request body.
func (s Source) Describe() string {
	switch s {
	case SourceDigestFile:
		return "Kaniko digest file"
	case SourceImageNameFile:
		return "Kaniko image-name-with-digest file"
	case SourceBuildxMetadata:
		return "buildx metadata file"
	case SourceFlag:
		return "--digest flag"
	case SourceRegistry:
		return "registry lookup of the tag at promotion time"
	case SourceDrift:
		return "drift: the tracked tag moved"
	case SourceProof:
		return "proven upstream (see above)"
	case SourceRollback:
		return "the last digest proven in the environment"
	}
	return string(s)
}
