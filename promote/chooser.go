package promote

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"pinbot.dev/pinbot/pins"
	"pinbot.dev/pinbot/registry"
)

// chooser picks each pin's digest, caching what the registry says about
// old digests and index children for the whole run.
type chooser struct {
	reg      Registry
	mu       sync.Mutex                 // guards the maps; never held across I/O
	old      map[string]*registry.Image // by "repo@digest"; nil when gone
	children map[string]string          // by "repo@digest platform"
}

func newChooser(reg Registry) *chooser {
	return &chooser{reg: reg, old: map[string]*registry.Image{}, children: map[string]string{}}
}

// digestFor returns the digest pin gets when p is promoted (see chooseDigest).
func (c *chooser) digestFor(ctx context.Context, pin pins.Pin, p Promotion, opts ChooseOptions) (string, string, error) {
	name := fmt.Sprintf("%s:%d", pin.File, pin.Line)
	if pin.Digest == p.Digest {
		return p.Digest, "", nil
	}
	var old *registry.Image
	if pin.Digest != "" {
		var err error
		if old, err = c.describeOld(ctx, pin.Image+"@"+pin.Digest); err != nil {
			return "", "", fmt.Errorf("%s: %w", name, err)
		}
	}
	choice, err := chooseDigest(name, old, p.Described, opts)
	if err != nil {
		return "", "", err
	}
	if choice.Child == nil {
		return p.Digest, choice.Note, nil
	}
	key := p.Image + "@" + p.Digest + " " + choice.Child.String()
	c.mu.Lock()
	d, ok := c.children[key]
	c.mu.Unlock()
	if ok {
		return d, choice.Note, nil
	}
	child, err := c.reg.ChildFor(ctx, p.Image+"@"+p.Digest, *choice.Child)
	if err != nil {
		return "", "", fmt.Errorf("%s pins a %s manifest: %w", name, choice.Child, err)
	}
	c.mu.Lock()
	c.children[key] = child.Digest
	c.mu.Unlock()
	return child.Digest, choice.Note, nil
}

// describeOld reads what a pin's current digest is; nil when the registry
// no longer has it.
func (c *chooser) describeOld(ctx context.Context, ref string) (*registry.Image, error) {
	c.mu.Lock()
	cached, ok := c.old[ref]
	c.mu.Unlock()
	if ok {
		return cached, nil
	}
	img, err := c.reg.Describe(ctx, ref)
	var found *registry.Image
	switch {
	case errors.Is(err, registry.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("reading the pinned digest's kind: %w", err)
	default:
		found = &img
	}
	c.mu.Lock()
	c.old[ref] = found
	c.mu.Unlock()
	return found, nil
}
