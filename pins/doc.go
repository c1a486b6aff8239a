// Package pins finds image digest pins in a manifest tree and rewrites them
// in place, changing the bytes of the digest (and, when asked, the tag) and
// nothing else.
//
// The package is a pure core: it reads and writes files under the directory
// it is given and talks to no network. [Rewrite] is the single-file core and
// does no I/O at all; [Scan], [Plan] and [Set] walk a tree around it.
//
// # Formats
//
// A pin is a place in a file where an image digest ("sha256:" and 64
// lowercase hex digits) is written down for a repository. pins reads these
// shapes of them:
//
//   - manifest: any YAML scalar under a key named "image" whose whole value is
//     an image reference, such as "nginx:1.27@sha256:...". This covers
//     Kubernetes workloads (containers, init and ephemeral containers) and
//     custom resources that embed pod templates, in any style YAML allows:
//     multiple documents, comments, anchors, plain, quoted and flow styles.
//     Aliases are not pins: the anchored value they point to is. Under any
//     other key too, a mapping value whose whole value is a reference with a
//     digest is a pin (Tekton params[].default, env[].value, other tools'
//     custom resources): the digest makes it unambiguous. Sequence items
//     are not (a list of strings is most often a command line).
//   - kustomize: the top-level "images" list of kustomization.yaml,
//     kustomization.yml and Kustomization files, and the spec.images of a
//     Flux Kustomization (kustomize.toolkit.fluxcd.io) in any YAML file, with
//     the keys name, newName, newTag and digest. The repository is newName,
//     or name without it. Also: name "repo:tag" with a digest; newTag
//     "tag@sha256:..."; newName "repo[:tag]@sha256:...".
//   - helm: any YAML mapping with a "repository" key, an optional "registry"
//     (prefixed to the repository), an optional "tag" and a "digest", as in
//     Helm values files: image: {repository: nginx, tag: "1.27", digest:
//     sha256:...}. A digest without a tag is a pin too, and so is a tag that
//     carries the digest, Bitnami style: tag: "1.27.3-debian-12-r5@sha256:...".
//   - dockerfile: FROM instructions of Dockerfile, Containerfile, *.Dockerfile,
//     *.Containerfile, Dockerfile.* and Containerfile.* files, with optional
//     flags such as --platform and an optional "AS name". A FROM that names an
//     earlier stage, scratch, or a reference holding a build argument is not a
//     pin, except FROM $NAME or ${NAME}: the default of "ARG NAME=ref" is
//     then the pin (once, however many stages start from it).
//   - pinsfile: a pins file, described below.
//
// A YAML file is one whose name ends in .yaml or .yml (any case), or is
// named Kustomization. An image reference inside a longer string (a command
// line, a ConfigMap blob, a block scalar) is not a pin.
//
// # Pins file
//
// A pins file records images that are not written in a manifest, such as the
// base image a build agent uses. It is named pins.yaml, pins.yml, or ends in
// .pins.yaml or .pins.yml, and holds one top-level key, pins, mapping a
// free-form name to an image:
//
//	pins:
//	  builder:
//	    image: 127.0.0.1:5000/org/builder   # repository, without tag or digest
//	    tag: "1.4"                          # optional: the tag the digest was taken from
//	    digest: sha256:0123...              # the pinned digest
//
// Entries whose image carries a tag or digest are not pins. Only the pins key
// of a pins file is read; other keys are free for the file's owner.
//
// # Matching and rewriting
//
// An [Update] names a repository in any form; pins match it after
// normalising both sides to go-containerregistry's form (internal/imageref), so
// "nginx", "docker.io/nginx" and "index.docker.io/library/nginx" are the
// same repository while host and port always matter.
//
// A rewrite replaces only the digest's bytes (and the tag's, when
// [Update.Tag] is set and the pin carries a tag). Positions come from the
// YAML parser's node positions; the file is never re-marshalled, so
// comments, indentation, quoting, line endings and a missing final newline
// survive byte for byte.
//
// # Tag variants
//
// A digest belongs to one tag variant, the suffix after the version as
// Renovate's docker versioning reads it (see imageref.Variant): "3.14.6-slim" and
// "3.14.6-alpine" differ, "v1" and "v2" share the empty one. When
// [Update.Tag] names the digest's tag, only pins of its variant (and
// digest-only pins) are in scope; when it names none, pins of several
// variants are refused with [ErrMixedVariants] unless [Update.AnyVariant].
// Pins of the repository left out of scope are reported ([WithSkipped]).
// [Decide] is the rule as a pure function over a list of pins.
//
// With [Update.PinTags], references that carry the named tag but no digest
// are pinned as well (a tag reference is never pinned to another tag's
// digest, and its tag never changes): "repo:tag" becomes "repo:tag@sha256:..." in manifests and
// Dockerfiles; in kustomize, helm and pins file mappings an empty digest
// value (empty quotes or null) is filled, and a block-style mapping with a tag
// but no digest key gains a "digest:" line after its tag line, indented like
// the tag key. Flow-style mappings without a digest key, and references
// without a tag, are left alone. A Helm chart must read image.digest for an
// added digest to take effect.
//
// A line comment "# pinbot: ignore" freezes a pin: [Scan] reports it with
// Ignored set and [Set] never changes it. It may sit on the digest's line,
// on the line of the key holding a helm mapping or a pins file entry, or on
// the first line of a kustomize images entry. In a Dockerfile, where inline
// comments do not exist, it is a comment line directly above the FROM.
//
// # Bad input
//
// A digest that is not "sha256:" and 64 lowercase hex digits is refused with
// imageref.ErrInvalidDigest (of pinbot's internal/imageref) before any
// file is read. A YAML document that does not parse fails the whole [Set]
// with a [*SyntaxError], and nothing is written, only when it holds what
// looks like a pin of the repository being set (a reference to it with a
// digest as a mapping value, or with a tag under "image"); the error names
// that reference's line. Otherwise it is reported to the [WithWarnings]
// callback with the line of its error, and the file's other documents are
// read and rewritten: a mention such as "app: nginx" in a Go template does
// not block a set.
// Files under a Helm chart's templates directory (a "templates" directory
// beside a Chart.yaml) are Go templates and are skipped. Symbolic links are
// never followed: a link to a file inside the tree would count its pins
// twice, and a link pointing outside would let a rewrite escape the tree.
// .git directories are skipped.
//
// [Set] is all-or-nothing across files: it writes each new file to a
// temporary file in the same directory with the original's mode, and
// renames them over the originals only when every file succeeded.
//
// # Speed
//
// [Scan] parses only files holding "sha256:", and [Set] only files that
// mention the repository (plus, to warn about them, malformed files holding
// a digest). Files are read and parsed by one goroutine per processor, which
// also share the directory walk. Most manifests are plain YAML, which a
// purpose-built parser reads into yaml.v3 nodes many times faster than
// yaml.v3 does, keeping only the nodes that can hold a pin; anything outside
// its subset goes to yaml.v3.
package pins
