package store

import (
	"context"
	"errors"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"pinbot.dev/pinbot/release"
)

func TestLedgersRoundTripAndConflict(t *testing.T) {
	ctx := context.Background()
	s := New(fake.NewSimpleClientset(), "pinbot-system")
	l, v, err := s.Get(ctx, "platform/manifests")
	if err != nil || v.exists || len(l.Envs) != 0 {
		t.Fatalf("Get of a missing ledger = %+v, %+v, %v", l, v, err)
	}
	l.Track("prod", "r.example/web").Pinned = "sha256:aa"
	if _, err := s.Put(ctx, "platform/manifests", l, v); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "platform/manifests", l, v); !errors.Is(err, ErrConflict) {
		t.Errorf("Put over a ledger created meanwhile = %v, want ErrConflict", err)
	}
	err = s.Update(ctx, "platform/manifests", func(l *release.Ledger) error {
		l.Track("prod", "r.example/web").Proven = "sha256:aa"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := s.Get(ctx, "platform/manifests")
	if err != nil || got.Lookup("prod", "r.example/web").Proven != "sha256:aa" {
		t.Errorf("after Update: %+v, %v", got.Lookup("prod", "r.example/web"), err)
	}
	repos, err := s.Repositories(ctx)
	if err != nil || len(repos) != 1 || repos[0] != "platform/manifests" {
		t.Errorf("Repositories = %q, %v", repos, err)
	}
}
