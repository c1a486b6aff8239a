package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/release"
)

// TestHoldsAndRelease: Holds lists every repository's holds in the order
// asked, an empty list when none; Release lifts the hold in the first
// repository that has it, records who and why, and leaves the others.
func TestHoldsAndRelease(t *testing.T) {
	ctx := context.Background()
	client, ns := apiServer(t)
	s := New(client, ns)
	repos := []string{"acme/web", "acme/api"}
	if got, err := s.Holds(ctx, repos); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("Holds with no ledgers = %#v, %v; want an empty, non-nil list", got, err)
	}
	const img, bad = "r.example/web", "sha256:bad"
	for _, r := range repos {
		if err := s.Update(ctx, r, func(l *release.Ledger) error {
			l.Holds = append(l.Holds, release.Hold{Env: "prod", Image: img, Digest: bad, Reason: "failed in " + r})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	holds, err := s.Holds(ctx, repos)
	if err != nil || len(holds) != 2 || holds[0].Repo != "acme/web" || holds[1].Repo != "acme/api" || holds[1].Reason != "failed in acme/api" {
		t.Fatalf("Holds = %+v, %v; want acme/web's, then acme/api's", holds, err)
	}

	got, err := s.Release(ctx, repos, "prod", img, bad, "alice", "rolled forward", time.Now())
	if err != nil || got != "acme/web" {
		t.Fatalf("Release = %q, %v; want acme/web, the first that holds it", got, err)
	}
	if l, _, _ := s.Get(ctx, "acme/web"); l.Held("prod", img, bad) != nil {
		t.Errorf("acme/web still holds %s", bad)
	}
	if l, _, _ := s.Get(ctx, "acme/api"); l.Held("prod", img, bad) == nil {
		t.Errorf("acme/api's hold was lifted too")
	}
	if got, err := s.Release(ctx, []string{"acme/web"}, "prod", img, bad, "alice", "again", time.Now()); err != nil || got != "" {
		t.Errorf("Release of a digest no longer held = %q, %v; want none", got, err)
	}
}

// TestReleaseByTheShortDigest: on a real API server, a hold is released
// by the 12 hex digits pinbot's pages show of its digest; a prefix that
// begins two held digests is refused, naming both, and releases nothing.
// Before, only the whole digest was accepted.
func TestReleaseByTheShortDigest(t *testing.T) {
	ctx := context.Background()
	client, ns := apiServer(t)
	s := New(client, ns)
	const img = "r.example/web"
	a := "sha256:0b7e1c" + strings.Repeat("1", 58)
	b := "sha256:0b7e1c" + strings.Repeat("2", 58)
	if err := s.Update(ctx, "acme/web", func(l *release.Ledger) error {
		l.Holds = append(l.Holds, release.Hold{Env: "prod", Image: img, Digest: a}, release.Hold{Env: "prod", Image: img, Digest: b})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Release(ctx, []string{"acme/web"}, "prod", img, "sha256:0b7e1c", "alice", "x", time.Now()); err == nil || got != "" ||
		!strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), b) {
		t.Errorf("an ambiguous prefix: %q, %v; want an error naming both digests", got, err)
	}
	short := a[:len("sha256:")+12]
	if got, err := s.Release(ctx, []string{"acme/web"}, "prod", img, short, "alice", "rolled forward", time.Now()); err != nil || got != "acme/web" {
		t.Fatalf("releasing by %s: %q, %v; want acme/web", short, got, err)
	}
	l, _, _ := s.Get(ctx, "acme/web")
	if l.Held("prod", img, a) != nil || l.Held("prod", img, b) == nil {
		t.Errorf("after the release: a held %v, b held %v; want a lifted, b kept", l.Held("prod", img, a) != nil, l.Held("prod", img, b) != nil)
	}
}
