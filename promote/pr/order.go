package pr

import (
	"fmt"
	"time"

	"github.com/Masterminds/semver/v3"
)

// Build is what orders one build of an image against another: its tags,
// the created time of its config and its org.opencontainers.image.revision
// label.
type Build struct {
	Digest   string
	Tags     []string
	Created  time.Time
	Revision string
}

// Order is how one build compares with another.
type Order int

// The orders CompareBuilds tells apart.
const (
	// OrderUnknown: nothing both builds carry orders them.
	OrderUnknown Order = iota
	// OrderOlder: the first build is older.
	OrderOlder
	// OrderSame: the builds are the same, or equal by what orders them.
	OrderSame
	// OrderNewer: the first build is newer.
	OrderNewer
)

// minCreated is the earliest created time taken as real: reproducible
// builds set the epoch (or nothing), which orders nothing.
var minCreated = time.Date(1980, 1, 2, 0, 0, 0, 0, time.UTC)

// CompareBuilds orders build a against build b, and names what decided:
//   - "tag": both carry a tag that is a version ("v1.2.3", "1.4",
//     "42"); the highest version of each is compared;
//   - "created": else, both know a real created time (not the epoch);
//   - "revision": else, both revision labels are versions (build
//     numbers); a commit hash orders nothing.
//
// The same digest is OrderSame; when nothing orders them, OrderUnknown.
func CompareBuilds(a, b Build) (Order, string) {
	if a.Digest != "" && a.Digest == b.Digest {
		return OrderSame, "digest"
	}
	if va, vb := highestVersion(a.Tags), highestVersion(b.Tags); va != nil && vb != nil {
		return orderOf(va.Compare(vb)), "tag"
	}
	if a.Created.After(minCreated) && b.Created.After(minCreated) {
		return orderOf(a.Created.Compare(b.Created)), "created"
	}
	if va, vb := version(a.Revision), version(b.Revision); va != nil && vb != nil {
		return orderOf(va.Compare(vb)), "revision"
	}
	return OrderUnknown, ""
}

func orderOf(cmp int) Order {
	switch {
	case cmp < 0:
		return OrderOlder
	case cmp > 0:
		return OrderNewer
	}
	return OrderSame
}

// highestVersion is the highest of the tags that are versions; nil when
// none is.
func highestVersion(tags []string) *semver.Version {
	var best *semver.Version
	for _, t := range tags {
		if v := version(t); v != nil && (best == nil || v.GreaterThan(best)) {
			best = v
		}
	}
	return best
}

// version parses s as a version: semantic versions, with or without a
// leading "v", and plain numbers. Anything else ("latest", "main",
// "sha-1a2b3c", a commit hash) is nil.
func version(s string) *semver.Version {
	if s == "" {
		return nil
	}
	v, err := semver.NewVersion(s)
	if err != nil {
		return nil
	}
	return v
}

// Superseding is a build newer than the one promoted, which the base pins
// or the open pull request proposes.
type Superseding struct {
	Build
	// Where is "the base branch main" or "pull request #7".
	Where string
	// By is what ordered the builds (see CompareBuilds).
	By string
}

// Superseded decides whether promoting build p would replace a newer
// build: it returns the first of current that is newer than p. Builds
// that cannot be ordered against p do not hold it back.
func Superseded(p Build, current []Superseding) (Superseding, bool) {
	for _, c := range current {
		if o, by := CompareBuilds(p, c.Build); o == OrderOlder {
			c.By = by
			return c, true
		}
	}
	return Superseding{}, false
}

// Note is the remark for people when a promotion is superseded.
func (s Superseding) Note(image string, p Build) string {
	return fmt.Sprintf("%s %s is older than %s in %s (by %s): nothing written; --allow-older promotes it anyway",
		image, describeBuild(p), describeBuild(s.Build), s.Where, s.By)
}

func describeBuild(b Build) string {
	tag := ""
	if len(b.Tags) > 0 {
		tag = b.Tags[0]
		if v := highestVersion(b.Tags); v != nil {
			tag = v.Original()
		}
	}
	return Ref(tag, b.Digest)
}
