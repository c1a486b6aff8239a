package pins

import (
	"errors"
	"fmt"
	"slices"
)

// Kind names the syntax a pin is written in.
type Kind string

// The kinds of pin; see the package documentation for each shape.
const (
	KindManifest   Kind = "manifest"
	KindKustomize  Kind = "kustomize"
	KindHelm       Kind = "helm"
	KindDockerfile Kind = "dockerfile"
	KindPinsFile   Kind = "pinsfile"
)

// Pin is one digest written down for a repository.
type Pin struct {
	File    string // slash path relative to the scanned directory
	Line    int    // 1-based line of the digest itself, where a change lands
	Column  int    // 1-based column (in characters) of the digest
	Kind    Kind
	Image   string // normalised repository, e.g. index.docker.io/library/nginx
	Tag     string // tag tracked by this pin, "" if none
	Digest  string // "sha256:<64 hex>"
	Ignored bool   // the pin carries a "# pinbot: ignore" comment
	// Also lists other images the pin may render as: a Helm mapping under
	// a global registry, which charts read differently.
	Also []string `json:",omitempty"`
}

// Of reports whether the pin is a pin of image (its Image, or one of
// Also).
func (p Pin) Of(image string) bool { return p.Image == image || slices.Contains(p.Also, image) }

// Key names the pin in an Update's Digests table.
func (p Pin) Key() PinKey { return PinKey{File: p.File, Line: p.Line, Digest: p.Digest} }

// PinKey names a pin in an Update's Digests table: its file, the line of
// its digest and the digest it holds, as Scan lists them. Unlike a column,
// these stay put when another pin on the same line gets a longer tag.
type PinKey struct {
	File   string // slash path relative to the directory
	Line   int
	Digest string
}

// Update describes one repository's new digest.
type Update struct {
	// Image is the repository to set, in any form ("nginx",
	// "127.0.0.1:5000/org/app"); a tag or digest on it is ignored. It is
	// normalised to go-containerregistry's form by internal/imageref.
	Image string
	// Digest is the new "sha256:<64 hex>" digest. It is validated before
	// any file is read, and may be empty only when Digests is set.
	Digest string
	// Tag, when set, names the tag the digest was taken from: only pins of
	// its variant are in scope (see Decide), and it replaces the tag of
	// every changed pin that carries one. Pins without a tag do not gain
	// one.
	Tag string
	// PinTags also pins references of the repository that carry a tag but
	// no digest, when that tag is Tag (see Decide).
	PinTags bool
	// AnyVariant lets a set that names no Tag change pins of several tag
	// variants, which it otherwise refuses (see Decide).
	AnyVariant bool
	// Digests, when not nil, chooses the digest of each pin of Image
	// instead of Digest: a pin listed by its Key gets the listed digest,
	// and a pin not listed keeps its own (promote uses it to keep an index
	// pinned as an index and a platform manifest as a platform manifest,
	// having asked the registry beforehand). Every listed digest is
	// validated before any file is read. References without a digest are
	// pinned to Digest under PinTags, and left alone when it is empty.
	Digests map[PinKey]string
	// Helm, when set, says per values file (slash path) how a Helm mapping
	// with a tag but no digest is pinned under PinTags: a chart whose
	// templates never read the digest key would not run the pinned digest
	// (helmform.Forms finds out by rendering the chart). Files not in it
	// get a digest key.
	Helm map[string]HelmChoice
	// Include, when set, limits Plan and Set to files for which it returns
	// true; other files are not read. It receives the slash path relative
	// to the directory, and is called from several goroutines at once.
	Include func(file string) bool
}

// HelmForm is how a Helm values mapping is pinned under PinTags.
type HelmForm int

// The forms of a Helm pin.
const (
	// HelmDigestKey fills or adds a "digest:" key beside the tag, for
	// charts whose templates read it (the default).
	HelmDigestKey HelmForm = iota
	// HelmTagDigest writes the digest into the tag ("tag: v5@sha256:..."),
	// for charts that render "repository:tag".
	HelmTagDigest
	// HelmLeave pins nothing: the chart renders no digest. The mapping is
	// reported as skipped, with the choice's Reason.
	HelmLeave
)

// HelmChoice is the form of the Helm pins of one values file, and why.
type HelmChoice struct {
	Form   HelmForm
	Reason string // for HelmLeave: the skip's reason
}

// Change is one changed line of one file.
//
// A pin whose tag and digest sit on different lines, such as a Helm mapping
// with a new tag, yields one Change per line, both carrying the pin's
// digests and tags. A "digest:" line added under PinTags has an empty
// Before.
type Change struct {
	File  string // slash path relative to the directory
	Line  int    // 1-based line in the rewritten file
	Kind  Kind
	Image string // normalised repository

	OldDigest, NewDigest string // OldDigest is "" when a tag reference was pinned
	OldTag, NewTag       string // equal unless the tag changed

	Before, After string // the full text of the line, without its line ending
}

// ErrInvalidTag reports a tag that is not a valid OCI tag: 1 to 128
// letters, digits, '_', '.' and '-', not starting with '.' or '-'.
var ErrInvalidTag = errors.New("invalid tag: want 1 to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'")

// Validate checks u as Plan and Set do before they read any file: the
// digest (or, with Digests, every digest listed), the tag and the repository. Its
// errors wrap imageref.ErrInvalidDigest or ErrInvalidTag where those apply.
func (u Update) Validate() error {
	_, err := prepare(u)
	return err
}

// SyntaxError reports a file pins cannot read or rewrite safely, such as
// malformed YAML, naming the file and line.
type SyntaxError struct {
	File string // slash path relative to the directory
	Line int    // 1-based
	Err  error
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Err.Error())
}

// Unwrap returns the underlying error.
func (e *SyntaxError) Unwrap() error { return e.Err }

// Option configures Scan, Plan and Set.
type Option func(*options)

type options struct {
	warn       func(file string, err error)
	skipped    func(Skip)
	hook       func(Phase)
	vendored   bool
	journalDir string
	tagRefs    bool
}

// WithWarnings receives each file that was skipped and why: a malformed file
// that does not mention the repository being set, or a pin that cannot be
// located in place. It is called from the calling goroutine, in file order,
// before Scan, Plan or Set returns. Without it, such files are skipped
// silently.
func WithWarnings(fn func(file string, err error)) Option {
	return func(o *options) { o.warn = fn }
}

// WithSkipped receives each pin of the repository that Plan or Set left
// alone because its tag is outside the set's scope (see Decide), in file
// and line order, from the calling goroutine, before a successful Plan or
// Set returns.
func WithSkipped(fn func(Skip)) Option {
	return func(o *options) { o.skipped = fn }
}

// WithVendored also reads node_modules and vendor directories, which are
// skipped by default: they hold third-party files, not the tree's own.
func WithVendored() Option {
	return func(o *options) { o.vendored = true }
}

// WithTagReferences also lists, as Pins with no Digest, the references
// that carry a tag (or nothing) but no digest: what a gate must see,
// since a reference by tag alone runs whatever the tag holds. Every file
// is then parsed, not only those that mention a digest, so it costs more
// than a plain Scan.
func WithTagReferences() Option {
	return func(o *options) { o.tagRefs = true }
}

// WithPhaseHook calls fn at each Phase of Set, from the calling goroutine,
// before Set goes on: a test can stop or kill the process at a known step.
func WithPhaseHook(fn func(Phase)) Option {
	return func(o *options) { o.hook = fn }
}

func makeOptions(opts []Option) options {
	o := options{hook: func(Phase) {}}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
