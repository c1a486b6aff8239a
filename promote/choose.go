package promote

import (
	"errors"
	"fmt"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/registry"
)

// errKindChange means a promotion would switch a pin between an image index
// and a single-platform manifest, or between platforms. pinbot never does
// that silently; ChooseOptions.AllowKindChange makes it explicit.
var errKindChange = errors.New("the promotion would change what kind of manifest the pin holds")

// ChooseOptions tune how a pin's new digest is chosen.
type ChooseOptions struct {
	// Platform is the platform child to pin when a pin's old digest is gone
	// from the registry (so its kind cannot be read) and the promoted
	// digest is an index. Zero keeps the index.
	Platform imageref.Platform
	// AllowKindChange lets an index pin take a single-platform manifest (or
	// a platform pin another platform), with a note in the pull request.
	AllowKindChange bool
	// AnyVariant lets a promotion without a tag change pins of several tag
	// variants, which is refused otherwise (see pins.Decide).
	AnyVariant bool
}

// digestChoice says which digest a pin gets.
type digestChoice struct {
	// Child is set when the pin gets the promoted index's child for this
	// platform; otherwise it gets the promoted digest itself.
	Child *imageref.Platform
	// Note is a remark for reviewers ("" when the choice is plain).
	Note string
}

// chooseDigest decides, from what the registry says, which digest a pin whose
// current digest is old gets when promoted is promoted. old is nil when the
// old digest is no longer in the registry. The pin keeps its kind:
//
//   - an index pin gets the promoted index;
//   - a platform-manifest pin gets the promoted index's child for the
//     same platform, or the promoted manifest when it has that platform;
//   - switching kind (index <-> single manifest, or platform) is
//     errKindChange unless opts.AllowKindChange;
//   - when old is nil, the pin takes the promoted digest's kind, or the
//     opts.Platform child of a promoted index, and Note says so.
//
// pin names the pin ("file:line") in errors and notes.
func chooseDigest(pin string, old *registry.Image, promoted registry.Image, opts ChooseOptions) (digestChoice, error) {
	if old != nil && old.Digest == promoted.Digest {
		return digestChoice{}, nil
	}
	if old == nil {
		if promoted.Index && opts.Platform.Architecture != "" {
			p := opts.Platform
			return digestChoice{Child: &p, Note: fmt.Sprintf("%s: its old digest is no longer in the registry, so its kind could not be read; pinned the %s child as --platform asks", pin, p)}, nil
		}
		return digestChoice{Note: fmt.Sprintf("%s: its old digest is no longer in the registry, so its kind could not be read; pinned the promoted %s", pin, kindOf(promoted))}, nil
	}
	switch {
	case old.Index && promoted.Index:
		return digestChoice{}, nil
	case !old.Index && promoted.Index:
		if old.Platform == nil {
			return digestChoice{}, fmt.Errorf("%s pins %s, a manifest without a platform, and the promoted digest is an index: %w", pin, old.Digest, errKindChange)
		}
		p := *old.Platform
		return digestChoice{Child: &p}, nil
	case old.Index && !promoted.Index:
		if !opts.AllowKindChange {
			return digestChoice{}, fmt.Errorf("%s pins an image index, but %s is a single %s: %w (promote an index, or allow the change)", pin, promoted.Digest, kindOf(promoted), errKindChange)
		}
		return digestChoice{Note: fmt.Sprintf("%s: kind changed from an image index to a single %s, as allowed", pin, kindOf(promoted))}, nil
	}
	// Both single manifests: the platform must stay.
	if old.Platform != nil && promoted.Platform != nil && !samePlatform(*old.Platform, *promoted.Platform) {
		if !opts.AllowKindChange {
			return digestChoice{}, fmt.Errorf("%s pins a %s manifest, but %s is a %s manifest: %w", pin, old.Platform, promoted.Digest, promoted.Platform, errKindChange)
		}
		return digestChoice{Note: fmt.Sprintf("%s: platform changed from %s to %s, as allowed", pin, old.Platform, promoted.Platform)}, nil
	}
	return digestChoice{}, nil
}

func kindOf(img registry.Image) string {
	switch {
	case img.Index:
		return "image index"
	case img.Platform != nil:
		return img.Platform.String() + " manifest"
	}
	return "manifest"
}

// samePlatform compares platforms the way containerd does: case-insensitive,
// with architecture aliases and default variants (arm64 is v8, arm is v7).
func samePlatform(a, b imageref.Platform) bool {
	return a.Normalized() == b.Normalized()
}
