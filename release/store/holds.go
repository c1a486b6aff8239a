package store

import (
	"context"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
// that repository; "" when none holds it.
func (s *Ledgers) Release(ctx context.Context, repos []string, env, image, digest, who, why string, now time.Time) (string, error) {
	for _, r := range repos {
		released := false
		err := s.Update(ctx, r, func(l *release.Ledger) error {
			if l.Held(env, image, digest) != nil {
				released = l.ReleaseBy(env, image, digest, who, why, now)
			}
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

// Caller is the user the cluster knows the store's client as, for the
// ledger's record of who lifted a hold; "unknown" when it will not say.
func (s *Ledgers) Caller(ctx context.Context) string {
	r, err := s.client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || r.Status.UserInfo.Username == "" {
		return "unknown"
	}
	return r.Status.UserInfo.Username
}
