package reconciler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/trust"
)

// SignatureError is a sync an app's verifySignatures refused or could not
// decide: it names the object and the image.
type SignatureError struct {
	Object object.Ref
	Image  string
	Err    error
}

// Error implements error.
func (e *SignatureError) Error() string {
	return fmt.Sprintf("%s: image %s: %s", e.Object, e.Image, e.Err)
}

// Unwrap returns the policy's refusal, or the registry's error.
func (e *SignatureError) Unwrap() error { return e.Err }

// checkSignatures checks every image the pass's render runs against the
// config's signature policy, before anything is applied: the admission
// check, made where the commit is known. An image the policy guards
// must pin a digest, and the digest must pass (a tag beside it may name
// the signed index that covers it). It stops at the first image that
// does not pass.
func (p *pass) checkSignatures(ctx context.Context) error {
	if !p.app.VerifySignatures {
		return nil
	}
	seen := map[string]bool{}
	for _, u := range p.desired {
		for _, image := range imagesIn(u.Object) {
			if seen[image] {
				continue
			}
			seen[image] = true
			if err := p.checkImage(ctx, image); err != nil {
				return &SignatureError{Object: object.RefOf(u), Image: image, Err: err}
			}
		}
	}
	return nil
}

func (p *pass) checkImage(ctx context.Context, image string) error {
	ref, err := imageref.Parse(image)
	if err != nil {
		return err
	}
	if p.r.signatures.Policy().For(ref.Repository) < 0 {
		return nil
	}
	if ref.Digest == "" {
		return &trust.Refusal{Image: ref.Repository, Rule: "verifySignatures", Reason: "it pins no digest, so no signature can vouch for what runs"}
	}
	prov, err := p.r.signatures.Check(ctx, p.r.reg, trust.Subject{Image: ref.Repository, Digest: ref.Digest, Tag: ref.Tag})
	if err != nil {
		return err
	}
	p.log.Debug("signature verified", "image", image, "signer", prov.Signer)
	return nil
}

// imagesIn lists the images of every container list in an object: a pod
// template of any workload kind (a CronJob's included), a Pod, or a kind
// pinbot does not know that holds one.
func imagesIn(v any) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				child := v[k]
				switch k {
				case "containers", "initContainers", "ephemeralContainers":
					if list, ok := child.([]any); ok {
						for _, c := range list {
							if m, ok := c.(map[string]any); ok {
								if image, ok := m["image"].(string); ok && image != "" {
									out = append(out, image)
								}
							}
						}
					}
				default:
					walk(child)
				}
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(v)
	return out
}

// refused reports whether err is the policy's refusal (final for the
// commit) rather than a fault to retry.
func refused(err error) bool { return errors.Is(err, trust.ErrRefused) }
