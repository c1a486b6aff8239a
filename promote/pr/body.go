package pr

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"

	"pinbot.dev/pinbot/internal/commitid"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/jsonkeys"
	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/trust/policy"
)

// MetaVersion is the version of the hidden block's JSON.
const MetaVersion = 1

// Meta describes a promotion pull request. It is kept as JSON in the hidden
// block of the body ("<!-- pinbot:{...} -->") so later runs can read what
// an open pull request proposes.
type Meta struct {
	// Version is MetaVersion.
	Version int `json:"v"`
	// Target is the promotion target; "" for a drift pull request that
	// groups all targets.
	Target string `json:"target"`
	// Kind is KindRollback for a rollback, "" for a promotion.
	Kind string `json:"kind,omitempty"`
	// Images are the promoted digests, one per image.
	Images []ImageMeta `json:"images"`
	// Base is the base commit the promotion commit was built on.
	Base string `json:"base,omitempty"`
	// Head is the promotion commit the text describes.
	Head string `json:"head,omitempty"`
	// Changes are the changed pins.
	Changes []ChangeRecord `json:"changes"`
}

// ImageMeta is one promoted digest.
type ImageMeta struct {
	Image  string `json:"image"`
	Digest string `json:"digest"`
	Tag    string `json:"tag,omitempty"`
	Source Source `json:"source"`
}

// ChangeRecord is one changed pin. Its JSON keys are those of the changes in
// `pinbot promote -o json`.
type ChangeRecord struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	Kind      string `json:"kind"`
	Image     string `json:"image"`
	OldDigest string `json:"oldDigest"`
	NewDigest string `json:"newDigest"`
	OldTag    string `json:"oldTag,omitempty"`
	NewTag    string `json:"newTag,omitempty"`
	// Before and After are the changed line's text; they appear in the
	// body's diff but not in the JSON.
	Before string `json:"-"`
	After  string `json:"-"`
}

// Image returns the ImageMeta of image, if the promotion has it.
func (m Meta) Image(image string) (ImageMeta, bool) {
	for _, im := range m.Images {
		if im.Image == image {
			return im, true
		}
	}
	return ImageMeta{}, false
}

// SameProposal reports whether m and o propose the same digests (and tags)
// for the same pins, ignoring where the digests came from and the commits.
func (m Meta) SameProposal(o Meta) bool {
	if m.Target != o.Target || len(m.Images) != len(o.Images) || len(m.Changes) != len(o.Changes) {
		return false
	}
	for i := range m.Images {
		a, b := m.Images[i], o.Images[i]
		if a.Image != b.Image || a.Digest != b.Digest || a.Tag != b.Tag {
			return false
		}
	}
	for i := range m.Changes {
		a, b := m.Changes[i], o.Changes[i]
		a.Before, a.After, b.Before, b.After = "", "", "", ""
		if a != b {
			return false
		}
	}
	return true
}

// Facts are what the registry says about a promoted image, shown in the
// pull request body.
type Facts struct {
	Created   time.Time
	Revision  string // org.opencontainers.image.revision
	Source    string // org.opencontainers.image.source
	Version   string // org.opencontainers.image.version
	Index     bool
	Platforms []string
	Size      int64
	// Trust is what the signature policy found; nil when it was not
	// asked (a rollback).
	Trust *policy.Provenance
}

// Undone is the failure a rollback undoes: the digest that failed to
// prove, and the evidence.
type Undone struct {
	Failed, Evidence string
}

// Proposal is everything a pull request body shows.
type Proposal struct {
	Meta Meta
	// Proofs are the upstream proofs an onward promotion carries: one per
	// image.
	Proofs []*release.Proof
	// Group names the images' group when they move as one
	// (environments' together:).
	Group string
	// Rollback is the failure a rollback undoes.
	Rollback *Undone
	// Forced is why a promotion was forced past the gate, "" if it was
	// not.
	Forced string
	// Facts per image.
	Facts map[string]Facts
	// Files maps images to the CI files their digests came from.
	Files map[string]string
	// Notes are remarks a reviewer must see, such as a pin whose kind
	// could not be checked.
	Notes []string
	// Policy is the file whose signatures: rules the Facts' Trust
	// follows.
	Policy string
}

const (
	hiddenOpen  = "<!-- pinbot:"
	hiddenClose = " -->"
)

// RenderBody renders the pull request body: the changed pins with old and
// new short digests and their one-line diffs, the image facts, where each
// digest came from, notes, and the hidden block. The result passes through
// redact.String, so no registered secret can reach a pull request.
func RenderBody(p Proposal) string {
	var b strings.Builder
	m := p.Meta
	target := "target **" + m.Target + "**" // a validated name: [a-z0-9._-]
	if m.Target == "" {
		target = "every target"
	}
	switch {
	case p.Rollback != nil && p.Group != "":
		fmt.Fprintf(&b, "pinbot rolls the group **%s** back in %s: `%s` failed to prove there, and the images merged with it go back with it to the digests proven there before.\n\n",
			md(p.Group), target, imageref.Short(p.Rollback.Failed))
	case p.Group != "":
		fmt.Fprintf(&b, "pinbot promotes the group **%s** in %s: the %d images move as one, with the digests proven together upstream.\n\n", md(p.Group), target, len(m.Images))
	case p.Rollback != nil && len(m.Images) == 1:
		im := m.Images[0]
		fmt.Fprintf(&b, "pinbot rolls **%s** back to `%s` in %s: `%s` failed to prove there.\n\n", md(im.Image), Ref(im.Tag, im.Digest), target, imageref.Short(p.Rollback.Failed))
	case len(m.Images) == 1:
		im := m.Images[0]
		fmt.Fprintf(&b, "pinbot promotes **%s** to `%s` in %s.\n\n", md(im.Image), Ref(im.Tag, im.Digest), target)
	default:
		fmt.Fprintf(&b, "pinbot promotes %d images in %s.\n\n", len(m.Images), target)
	}
	if p.Forced != "" {
		fmt.Fprintf(&b, "> **Forced past the gate** (`pinbot promote --force`): %s\n\n", md(p.Forced))
	}
	if rb := p.Rollback; rb != nil {
		b.WriteString("### Why\n\n")
		fmt.Fprintf(&b, "%s\n\n", md(rb.Evidence))
		held := "`" + imageref.Short(rb.Failed) + "` is"
		if p.Group != "" {
			held = "The digests this replaces are"
		}
		fmt.Fprintf(&b, "%s held in %s and the environments after it: drift, promote and pinbot's onward promotions refuse them until a person releases them (`pinbot hold release`) or a newer digest is pinned. The digest restored is the last one proven here; the commits since are kept.\n\n", held, target)
	}

	fmt.Fprintf(&b, "### Pins (%d)\n\n", len(m.Changes))
	b.WriteString("| Pin | Old | New |\n|---|---|---|\n")
	for _, c := range m.Changes {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", code(fmt.Sprintf("%s:%d", c.File, c.Line)),
			code(Ref(c.OldTag, c.OldDigest)), code(Ref(c.NewTag, c.NewDigest)))
	}
	b.WriteString("\n")
	var diff strings.Builder
	for _, c := range m.Changes {
		fmt.Fprintf(&diff, "@@ %s:%d @@\n-%s\n+%s\n", c.File, c.Line, c.Before, c.After)
	}
	fence := fenceFor(diff.String())
	fmt.Fprintf(&b, "%sdiff\n%s%s\n\n", fence, diff.String(), fence)
	for _, pr := range p.Proofs {
		renderProof(&b, pr)
	}

	for _, im := range m.Images {
		renderImage(&b, p, im, len(m.Images) == 1)
	}
	if len(p.Notes) > 0 {
		b.WriteString("### Notes\n\n")
		for _, n := range p.Notes {
			fmt.Fprintf(&b, "- %s\n", md(n))
		}
		b.WriteString("\n")
	}
	b.WriteString("Opened by pinbot. Merge to deploy; pinbot updates this pull request when a newer digest is promoted.\n\n")
	raw, _ := json.Marshal(m) // HTML-safe: "<", ">" and "&" are escaped, so "-->" cannot appear
	b.WriteString(hiddenOpen)
	b.Write(raw)
	b.WriteString(hiddenClose + "\n")
	return redact.String(b.String())
}

// renderImage renders im's facts: the image, its digest and tag, what its
// labels say, its kind and platforms, where the digest came from and its
// signature. only says it is the proposal's one image.
func renderImage(b *strings.Builder, p Proposal, im ImageMeta, only bool) {
	if only {
		b.WriteString("### Image\n\n")
	} else {
		fmt.Fprintf(b, "### %s\n\n", md(im.Image))
	}
	b.WriteString("| | |\n|---|---|\n")
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(b, "| %s | %s |\n", k, v)
		}
	}
	f := p.Facts[im.Image]
	row("Image", code(im.Image))
	row("Digest", code(im.Digest))
	row("Tag", code(im.Tag))
	if !f.Created.IsZero() {
		row("Created", f.Created.UTC().Format(time.RFC3339))
	}
	row("Revision", code(f.Revision))
	row("Source", md(f.Source))
	row("Version", code(f.Version))
	kind := "single-platform manifest"
	if f.Index {
		kind = "image index"
	}
	row("Kind", kind)
	row("Platforms", md(strings.Join(f.Platforms, ", ")))
	if f.Size > 0 {
		row("Size", humanSize(f.Size))
	}
	from := im.Source.Describe()
	if file := p.Files[im.Image]; file != "" {
		from += " " + code(file)
	}
	row("Digest from", from)
	b.WriteString("\n")
	if f.Trust != nil {
		renderSignature(b, *f.Trust, p.Policy)
	}
}

// ErrNoMeta means a pull request body holds no pinbot hidden block.
var ErrNoMeta = errors.New("no pinbot block in the pull request body")

var hiddenRE = regexp.MustCompile(`<!-- pinbot:(\{.*\}) -->`)

// ParseBody reads the hidden block of a pull request body that RenderBody
// wrote. It returns ErrNoMeta when the body has none.
func ParseBody(body string) (Meta, error) {
	found := hiddenRE.FindAllStringSubmatch(body, -1)
	if len(found) == 0 {
		return Meta{}, ErrNoMeta
	}
	var m Meta
	if err := jsonkeys.Unmarshal([]byte(found[len(found)-1][1]), &m); err != nil {
		return Meta{}, fmt.Errorf("parsing pinbot block: %w", err)
	}
	if m.Version != MetaVersion {
		return Meta{}, fmt.Errorf("parsing pinbot block: version %d, want %d", m.Version, MetaVersion)
	}
	return m, nil
}

// code formats s as a Markdown code span ("" stays "").
func code(s string) string { return md(s) }

// md renders text that comes from a person or a peer (a reason, an image
// name, a registry's source label, a signer identity, an error) as data:
// one inline code span on one line. Neither CommonMark (headings, tables,
// links, images, HTML) nor Gitea's post-processors (bare links, mentions,
// issue references, emoji), which skip code, read anything inside it.
// Line breaks of every kind become spaces and other control characters
// are dropped, so the span cannot be ended by a new block; its fence is
// longer than any backtick run inside; pipes are escaped for table cells.
func md(s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\r' || r == '\n' || r == '\u0085' || r == '\u2028' || r == '\u2029':
			b.WriteByte(' ')
		case r == '|':
			b.WriteString("\\|")
		case unicode.IsControl(r) && r != '\t':
		default:
			b.WriteRune(r)
		}
	}
	text := b.String()
	fence := strings.Repeat("`", longestRun(text, '`')+1)
	if strings.HasPrefix(text, "`") || strings.HasSuffix(text, "`") {
		text = " " + text + " "
	}
	return fence + text + fence
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c rune) int {
	longest, run := 0, 0
	for _, r := range s {
		if r == c {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}

// fenceFor returns a code fence longer than any backtick run in s.
func fenceFor(s string) string {
	return strings.Repeat("`", max(3, longestRun(s, '`')+1))
}

func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// KindRollback is Meta.Kind of a rollback pull request.
const KindRollback = "rollback"

// renderProof writes the upstream proof an onward promotion carries: the
// environment, since when it held and its soak, and every Pod with its
// node and running digest.
func renderProof(b *strings.Builder, pr *release.Proof) {
	fmt.Fprintf(b, "### Proven in %s: %s\n\n", pr.Env, md(pr.Image)) // a validated name
	fmt.Fprintf(b, "Every replica of %s has run `%s` as Verified since %s, without a break",
		md(strings.Join(pr.Apps, ", ")), imageref.Short(pr.Digest), pr.Since.UTC().Format(time.RFC3339))
	if pr.Held < pr.Soak {
		// Proposed during the soak: the gate says when it ends.
		fmt.Fprintf(b, " (soak %s: `pinbot/gate` turns green at %s if it still holds).", pr.Soak, pr.Since.Add(pr.Soak).UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintf(b, ": %s (soak %s).", pr.Held.Round(time.Second), pr.Soak)
	}
	if pr.Commit != "" {
		fmt.Fprintf(b, " Commit `%s`.", commitid.Short(pr.Commit))
	}
	b.WriteString("\n\n| Pod | Node | Container | Running |\n|---|---|---|---|\n")
	for _, pod := range pr.Pods {
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", code(pod.Namespace+"/"+pod.Pod), code(pod.Node), code(pod.Container), code(imageref.Short(pod.Running)))
	}
	b.WriteString("\n")
}

// renderSignature writes who signed a digest and how it was built: the
// facts a reviewer needs to judge a 64-hex change.
func renderSignature(b *strings.Builder, t policy.Provenance, file string) {
	b.WriteString("#### Signed and built by\n\n")
	if !t.Guarded {
		fmt.Fprintf(b, "No signature policy for this image: nothing checked who built or signed it (see `signatures:` in %s).\n\n", file)
		return
	}
	b.WriteString("| | |\n|---|---|\n")
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(b, "| %s | %s |\n", k, v)
		}
	}
	row("Signer", md(t.Signer))
	signed := "not timestamped (a key signature)"
	if !t.SignedAt.IsZero() {
		signed = t.SignedAt.UTC().Format(time.RFC3339) + " (verified timestamp)"
	}
	row("Signed", signed)
	row("Format", t.Format) // one of trust.Format*
	row("Signature on", code(t.Digest))
	row("Policy", code(t.Rule)+" of "+code(file))
	for _, a := range t.Attestations {
		row("Attestation", code(a.PredicateType)+", signed by "+md(a.Signer))
		row("Builder", code(a.BuilderID))
		row("Source", md(a.SourceRepository))
		row("Ref", code(a.Ref))
		row("Commit", code(a.Commit))
		row("Build", md(a.Invocation))
		if a.Environment != "" {
			row("Proven running", md(a.Environment)+" for "+md(a.ProvenFor))
		}
	}
	b.WriteString("\n")
}
