package promote

import (
	"context"
	"fmt"

	"pinbot.dev/pinbot/promote/pr"
)

// superseded looks for a build newer than the promotion of job j among the
// digests the base pins (the pins j may change) and those the open pull
// request's hidden block proposes, reading created times and revisions
// from the registry. It returns the note for people when one is found.
func (s *session) superseded(ctx context.Context, j job, open *pr.Meta, openNumber int64) (string, bool, error) {
	for _, p := range j.proms {
		promoted := pr.Build{Digest: p.Digest, Tags: p.Tags, Created: p.Described.Created, Revision: p.Described.Revision}
		if len(promoted.Tags) == 0 && p.Tag != "" {
			promoted.Tags = []string{p.Tag}
		}
		same := map[string]bool{p.Digest: true}
		for _, c := range p.Described.Children {
			same[c.Digest] = true // a platform pin of the promoted index
		}
		var current []pr.Superseding
		add := func(digest, tag, where string) error {
			if digest == "" || same[digest] {
				return nil
			}
			same[digest] = true
			b := pr.Build{Digest: digest}
			if tag != "" {
				b.Tags = []string{tag}
			}
			if o, _ := pr.CompareBuilds(promoted, b); o == pr.OrderUnknown {
				img, err := s.chooser.describeOld(ctx, p.Image+"@"+digest)
				if err != nil {
					return fmt.Errorf("ordering %s against %s@%s: %w", p.Digest, p.Image, digest, err)
				}
				if img == nil {
					return nil // gone from the registry: orders nothing
				}
				b.Created, b.Revision = img.Created, img.Revision
			}
			current = append(current, pr.Superseding{Build: b, Where: where})
			return nil
		}
		for _, pin := range s.pins {
			if pin.Image != p.Image || pin.Ignored || !p.match(pin) {
				continue
			}
			if err := add(pin.Digest, pin.Tag, "the base branch "+s.base); err != nil {
				return "", false, err
			}
		}
		if open != nil {
			for _, im := range open.Images {
				if im.Image != p.Image {
					continue
				}
				if err := add(im.Digest, im.Tag, fmt.Sprintf("pull request #%d", openNumber)); err != nil {
					return "", false, err
				}
			}
		}
		if newer, ok := pr.Superseded(promoted, current); ok {
			return newer.Note(p.Image, promoted), true, nil
		}
	}
	return "", false, nil
}
