package promote

import (
	"context"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"

	"pinbot.dev/pinbot/pins"
	"pinbot.dev/pinbot/promote/pr"
)

type tagKey struct{ image, tag string }

// tracking is one tag that pins follow and what the registry said.
type tracking struct {
	key     tagKey
	pins    []pins.Pin
	promo   Promotion
	moved   map[string]bool // targets where a pin's digest moved
	err     error
	checked bool
}

// tracked groups the base's pins by the tag they follow.
func (s *session) tracked() []*tracking {
	byKey := map[tagKey]*tracking{}
	var out []*tracking
	for _, p := range s.pins {
		tag := s.tagOf(p)
		if p.Ignored || p.Digest == "" || tag == "" || s.cfg.TargetOf(p.File) == "" {
			continue
		}
		k := tagKey{p.Image, tag}
		t := byKey[k]
		if t == nil {
			t = &tracking{key: k, moved: map[string]bool{}}
			byKey[k] = t
			out = append(out, t)
		}
		t.pins = append(t.pins, p)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].key.image != out[b].key.image {
			return out[a].key.image < out[b].key.image
		}
		return out[a].key.tag < out[b].key.tag
	})
	return out
}

// tagOf is the tag a pin follows: its own, or a track entry's for a
// digest-only pin.
func (s *session) tagOf(p pins.Pin) string {
	if p.Tag != "" {
		return p.Tag
	}
	return s.cfg.TrackedTag(p.Image, p.File)
}

// resolveAll resolves every tracked tag, at most opts.Concurrency at once,
// and works out which of its pins moved. Failures are kept per tag.
func (s *session) resolveAll(ctx context.Context, tracked []*tracking, opts DriftOptions) {
	var g errgroup.Group
	g.SetLimit(opts.Concurrency)
	for _, t := range tracked {
		g.Go(func() error {
			t.checked = true
			t.err = s.check(ctx, t, opts.Choose)
			return nil
		})
	}
	_ = g.Wait() // every goroutine returns nil; failures are in t.err
}

// check resolves one tag and decides, per pin, whether its digest moved:
// the digest the pin would get (the tag's index, or its child for the
// pin's platform) differs from the pinned one.
func (s *session) check(ctx context.Context, t *tracking, opts ChooseOptions) error {
	ref := t.key.image + ":" + t.key.tag
	d, err := s.tags.Resolve(ctx, ref)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", ref, err)
	}
	t.promo = Promotion{Image: t.key.image, Tag: t.key.tag, Tags: []string{t.key.tag}, Digest: d.Digest, Source: pr.SourceDrift}
	differs := false
	for _, p := range t.pins {
		if p.Digest != d.Digest {
			differs = true
		}
	}
	if !differs {
		return nil
	}
	if t.promo.Described, err = s.env.Registry.Describe(ctx, t.key.image+"@"+d.Digest); err != nil {
		return fmt.Errorf("describing %s@%s: %w", ref, d.Digest, err)
	}
	for _, p := range t.pins {
		if p.Digest == d.Digest {
			continue
		}
		want, _, err := s.chooser.digestFor(ctx, p, t.promo, opts)
		if err != nil {
			return fmt.Errorf("%s: %w", ref, err)
		}
		if want != p.Digest {
			target := s.cfg.TargetOf(p.File)
			if e, ok := s.cfg.Environments.Get(target); ok && e.From != "" {
				continue // it takes what its upstream proves, not drift
			}
			t.moved[target] = true
		}
	}
	return nil
}
