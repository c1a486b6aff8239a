package verdict

import (
	"strings"

	"pinbot.dev/pinbot/internal/imageref"
)

// pinnedImage splits an image reference from a manifest into its repository
// (as written, not normalised) and the digest it pins. ok is false when the
// reference pins no digest. "registry:5000/org/app:v1@sha256:..." gives
// ("registry:5000/org/app", "sha256:...").
func pinnedImage(image string) (repo, digest string, ok bool) {
	name, _, d := imageref.Split(image)
	if !imageref.ValidDigest(d) {
		return "", "", false
	}
	return name, d, true
}

// imageIDForm is how a container runtime reported the image it runs.
type imageIDForm int

const (
	formInvalid  imageIDForm = iota
	formManifest             // repo@sha256:<manifest or index digest>
	formConfig               // sha256:<config digest>, as containerd may report
)

// parseImageID reads a containerStatuses[].imageID: "repo@sha256:X",
// "docker-pullable://repo@sha256:X" or a bare "sha256:X" (also behind
// "docker://"). It returns the digest and its form.
func parseImageID(id string) (string, imageIDForm) {
	id = trimRuntimeScheme(id)
	if imageref.ValidDigest(id) {
		return id, formConfig
	}
	if _, d, ok := strings.Cut(id, "@"); ok && imageref.ValidDigest(d) {
		return d, formManifest
	}
	return "", formInvalid
}

// trimRuntimeScheme drops the "docker-pullable://" or "docker://" a
// Docker-based runtime puts before an imageID.
func trimRuntimeScheme(id string) string {
	for _, p := range []string{"docker-pullable://", "docker://"} {
		id = strings.TrimPrefix(id, p)
	}
	return id
}
