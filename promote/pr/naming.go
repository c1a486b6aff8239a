package pr

import (
	"fmt"
	"sort"
	"strings"

	"pinbot.dev/pinbot/internal/imageref"
)

// Slug turns a normalised repository into a branch name segment: lowercase,
// with every character outside [a-z0-9.-] replaced by '-', e.g.
// "127.0.0.1:3000/org/app" -> "127.0.0.1-3000-org-app". The registry host
// stays in, so two registries' "org/app" get different branches.
func Slug(image string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(image) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), ".-")
	for strings.Contains(s, "..") {
		s = strings.ReplaceAll(s, "..", ".")
	}
	if strings.HasSuffix(s, ".lock") {
		s = strings.TrimSuffix(s, ".lock") + "-lock"
	}
	return s
}

// Branch is the deterministic branch of one (target, image) promotion:
// "<prefix><target>/<Slug(image)>", e.g. "pinbot/prod/127.0.0.1-3000-org-app".
func Branch(prefix, target, image string) string {
	return prefix + target + "/" + Slug(image)
}

// RollbackBranch is the branch of the one rollback pull request of
// (target, image): "<prefix>rollback/<target>/<Slug(image)>".
func RollbackBranch(prefix, target, image string) string {
	return prefix + "rollback/" + target + "/" + Slug(image)
}

// TogetherBranch is the branch of a group of images that move into target
// as one: "<prefix><target>/together/<Slug(group)>".
func TogetherBranch(prefix, target, group string) string {
	return prefix + target + "/together/" + Slug(group)
}

// TogetherRollbackBranch is the branch of a group's rollback:
// "<prefix>rollback/<target>/together/<Slug(group)>".
func TogetherRollbackBranch(prefix, target, group string) string {
	return prefix + "rollback/" + target + "/together/" + Slug(group)
}

// ForcedBranch is the branch of a promotion forced past the gate into
// target: "<prefix>forced/<target>/<Slug(image)>". A forced promotion never
// rides on the branch of a gated one, whose pull request says what was
// proven.
func ForcedBranch(prefix, target, image string) string {
	return prefix + "forced/" + target + "/" + Slug(image)
}

// TogetherForcedBranch is the branch of a group forced past the gate:
// "<prefix>forced/<target>/together/<Slug(group)>".
func TogetherForcedBranch(prefix, target, group string) string {
	return prefix + "forced/" + target + "/together/" + Slug(group)
}

// RollbackLabel marks pinbot's rollback pull requests.
const RollbackLabel = "pinbot-rollback"

// GroupBranch is the branch of a drift pull request that groups several
// images: "<prefix><target>/drift" for GroupTarget, "<prefix>drift" for
// GroupAll (target "").
func GroupBranch(prefix, target string) string {
	if target == "" {
		return prefix + "drift"
	}
	return prefix + target + "/drift"
}

// Ref formats a promoted digest for people: "v2@sha256:abcdef123456", or
// "sha256:abcdef123456" without a tag.
func Ref(tag, digest string) string {
	short := imageref.Short(digest)
	if tag == "" {
		return short
	}
	return tag + "@" + short
}

// Title is the pull request title, e.g.
// "Promote 127.0.0.1:3000/org/app to v2@sha256:abcdef123456 (prod)".
func Title(m Meta) string {
	if m.Kind == KindRollback && len(m.Images) == 1 {
		im := m.Images[0]
		return fmt.Sprintf("Roll back %s to %s (%s)", im.Image, Ref(im.Tag, im.Digest), m.targetLabel())
	}
	if len(m.Images) == 1 {
		im := m.Images[0]
		return fmt.Sprintf("Promote %s to %s (%s)", im.Image, Ref(im.Tag, im.Digest), m.targetLabel())
	}
	return fmt.Sprintf("Promote %d images (%s)", len(m.Images), m.targetLabel())
}

func (m Meta) targetLabel() string {
	if m.Target == "" {
		return "all targets"
	}
	return m.Target
}

// Trailers of promotion commits.
const (
	TrailerImage  = "Pinbot-Image"
	TrailerDigest = "Pinbot-Digest"
	TrailerTag    = "Pinbot-Tag"
	TrailerTarget = "Pinbot-Target"
)

// CommitMessage is the commit message of a promotion: the title as subject,
// the changed pins, and Pinbot-Image / Pinbot-Digest (and Pinbot-Tag)
// trailers per image, then Pinbot-Target.
func CommitMessage(m Meta) string {
	var b strings.Builder
	b.WriteString(Title(m))
	b.WriteString("\n\n")
	files := map[string]int{}
	for _, c := range m.Changes {
		files[c.File]++
	}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		fmt.Fprintf(&b, "- %s (%d %s)\n", f, files[f], plural(files[f], "pin", "pins"))
	}
	b.WriteString("\n")
	for _, im := range m.Images {
		fmt.Fprintf(&b, "%s: %s\n%s: %s\n", TrailerImage, im.Image, TrailerDigest, im.Digest)
		if im.Tag != "" {
			fmt.Fprintf(&b, "%s: %s\n", TrailerTag, im.Tag)
		}
	}
	if m.Target != "" {
		fmt.Fprintf(&b, "%s: %s\n", TrailerTarget, m.Target)
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// DescribeImages names each image and the reference it is promoted to,
// comma-separated, for a sentence people read.
func DescribeImages(ims []ImageMeta) string {
	s := ""
	for i, im := range ims {
		if i > 0 {
			s += ", "
		}
		s += im.Image + " " + Ref(im.Tag, im.Digest)
	}
	return s
}
