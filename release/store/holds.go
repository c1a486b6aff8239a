package store

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/release"
)

// RepoHold is a hold and the repository whose ledger keeps it.
type RepoHold struct {
	Repo string `json:"repo"`
	release.Hold
}

// Holds lists the holds of repos' ledgers, in that order.
func (s *Ledgers) Holds(ctx context.Context, repos []string) ([]RepoHold, error) {
	out := []RepoHold{}
	for _, r := range repos {
		l, _, err := s.Get(ctx, r)
		if err != nil {
			return nil, err
		}
		for _, h := range l.Holds {
			out = append(out, RepoHold{Repo: r, Hold: h})
		}
	}
	return out, nil
}

// Release lifts the hold of image@digest in env in the first of repos
// whose ledger holds it, recording who lifted it and why, and returns
// that repository; "" when none holds it. digest may be the short form
// pinbot's pages show ("sha256:" and 12 or more hex digits): it names the
// one held digest it begins, and one that begins two is an error.
func (s *Ledgers) Release(ctx context.Context, repos []string, env, image, digest, who, why string, now time.Time) (string, error) {
	for _, r := range repos {
		released := false
		err := s.Update(ctx, r, func(l *release.Ledger) error {
			full, err := heldDigest(l, env, image, digest)
			if err != nil || full == "" {
				return err
			}
			released = l.ReleaseBy(env, image, full, who, why, now)
			return nil
		})
		if err != nil {
			return "", err
		}
		if released {
			return r, nil
		}
	}
	return "", nil
}

// heldDigest is the digest of image held in env that digest names: itself,
// or the one held digest it begins; "" when none.
func heldDigest(l *release.Ledger, env, image, digest string) (string, error) {
	if l.Held(env, image, digest) != nil {
		return digest, nil
	}
	var found []string
	for _, h := range l.Holds {
		if h.Env == env && h.Image == image && strings.HasPrefix(h.Digest, digest) && !slices.Contains(found, h.Digest) {
			found = append(found, h.Digest)
		}
	}
	if len(found) > 1 {
		return "", fmt.Errorf("%s begins %d held digests of %s in %s (%s): give more of it", digest, len(found), image, env, strings.Join(found, ", "))
	}
	if len(found) == 1 {
		return found[0], nil
	}
	return "", nil
}

// Caller is the user the cluster knows the store's client as, for the
// ledger's record of who lifted a hold; "unknown" when it will not say.
func (s *Ledgers) Caller(ctx context.Context) string {
	r, err := s.client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || r.Status.UserInfo.Username == "" {
		return "unknown"
	}
	return r.Status.UserInfo.Username
}

// shortDigest is a digest as pinbot's pages show it, or longer:
// "sha256:" and 12 to 64 hex digits.
var shortDigest = regexp.MustCompile(`^sha256:[0-9a-f]{12,64}$`)

// HeldRef reads hold release's IMAGE@DIGEST: a repository, normalised
// (a tag on it is ignored), and a whole digest or the 12 or more hex
// digits pinbot shows of one.
func HeldRef(s string) (image, digest string, err error) {
	name, _, digest := imageref.Split(s)
	if !shortDigest.MatchString(digest) {
		return "", "", fmt.Errorf("not REPOSITORY@sha256:HEX")
	}
	if image, err = imageref.ParseRepository(name); err != nil {
		return "", "", err
	}
	return image, digest, nil
}

// Hold holds digest of image in env and the environments after it in
// repo's chain, as a failure there would, recording who and why: none of
// them takes it until a person releases the hold. It reports whether it
// held anything (false when env already holds it).
func (s *Ledgers) Hold(ctx context.Context, repo, env, image, digest, who, why string, now time.Time) (bool, error) {
	held := false
	err := s.Update(ctx, repo, func(l *release.Ledger) error {
		if _, ok := l.Chain.Get(env); !ok {
			return fmt.Errorf("%s has no environment %s in its chain", repo, env)
		}
		if l.Held(env, image, digest) != nil {
			return nil
		}
		for _, e := range l.Chain.Below(env) {
			if l.Held(e, image, digest) == nil {
				l.Holds = append(l.Holds, release.Hold{Env: e, Image: image, Digest: digest, Reason: "held by " + who + ": " + why, Since: now, From: env})
			}
		}
		l.LogBy(now, env, image, release.ReasonHeld, fmt.Sprintf("%s held %s in %s and after it: %s", who, imageref.Short(digest), env, why), who, why)
		held = true
		return nil
	})
	return held, err
}
