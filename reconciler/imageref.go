package reconciler

import (
	"regexp"
	"strings"
)

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// pinnedImage splits an image reference from a manifest into its repository
// and the digest it pins. ok is false when the reference pins no digest.
// "registry:5000/org/app:v1@sha256:..." gives ("registry:5000/org/app",
// "sha256:...").
func pinnedImage(image string) (repo, digest string, ok bool) {
	name, d, found := strings.Cut(image, "@")
	if !found || !digestRE.MatchString(d) {
		return "", "", false
	}
	return stripTag(name), d, true
}

// stripTag removes a ":tag" suffix (a colon after the last slash).
func stripTag(name string) string {
	slash := strings.LastIndex(name, "/")
	if colon := strings.LastIndex(name, ":"); colon > slash {
		return name[:colon]
	}
	return name
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
	for _, p := range []string{"docker-pullable://", "docker://"} {
		id = strings.TrimPrefix(id, p)
	}
	if digestRE.MatchString(id) {
		return id, formConfig
	}
	if _, d, ok := strings.Cut(id, "@"); ok && digestRE.MatchString(d) {
		return d, formManifest
	}
	return "", formInvalid
}

// shortDigest abbreviates "sha256:<64 hex>" to "sha256:<12 hex>…".
func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12] + "…"
	}
	return d
}
