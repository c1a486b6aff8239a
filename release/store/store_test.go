package store

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/release"
)

func TestLedgersRoundTripAndConflict(t *testing.T) {
	ctx := context.Background()
	client, ns := apiServer(t)
	s := New(client, ns)
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

// TestLedgersNeverCollide: repositories whose names differ only in '/',
// '-', '_' and '.' keep ledgers of their own, holds included.
func TestLedgersNeverCollide(t *testing.T) {
	ctx := context.Background()
	client, ns := apiServer(t)
	s := New(client, ns)
	repos := []string{"acme/web-app", "acme-web/app", "acme/web_app", "acme/web.app"}
	names := map[string]bool{}
	for _, r := range repos {
		names[Name(r)] = true
		err := s.Update(ctx, r, func(l *release.Ledger) error {
			l.Holds = append(l.Holds, release.Hold{Env: "prod", Image: "r.example/web", Digest: "sha256:" + r})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(names) != len(repos) {
		t.Errorf("%d ConfigMap names for %d repositories", len(names), len(repos))
	}
	for _, r := range repos {
		l, _, err := s.Get(ctx, r)
		if err != nil || len(l.Holds) != 1 || l.Holds[0].Digest != "sha256:"+r {
			t.Errorf("the ledger of %s holds %+v, %v; want its own hold only", r, l.Holds, err)
		}
	}
}

// TestLegacyLedgerIsReadOnlyByItsOwnRepository: a ledger under the old,
// shared name is moved to the new one by the repository its annotation
// names, and never read by another whose name maps to it.
func TestLegacyLedgerIsReadOnlyByItsOwnRepository(t *testing.T) {
	ctx := context.Background()
	kube, ns := apiServer(t)
	s := New(kube, ns)
	old := release.New()
	old.Holds = append(old.Holds, release.Hold{Env: "prod", Image: "r.example/web", Digest: "sha256:held"})
	data, _ := old.Marshal()
	if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: legacyName("acme/web-app"), Labels: map[string]string{LabelRepository: "true"},
			Annotations: map[string]string{annotationRepository: "acme/web-app"}},
		Data: map[string]string{ledgerKey: string(data)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if l, _, err := s.Get(ctx, "acme-web/app"); err != nil || len(l.Holds) != 0 {
		t.Errorf("another repository read the old ledger: %+v, %v", l.Holds, err)
	}
	if err := s.Update(ctx, "acme/web-app", func(*release.Ledger) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if l, _, err := s.Get(ctx, "acme/web-app"); err != nil || len(l.Holds) != 1 {
		t.Errorf("the ledger moved to its new name holds %+v, %v; want the old hold", l.Holds, err)
	}
	if _, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, legacyName("acme/web-app"), metav1.GetOptions{}); err == nil {
		t.Error("the old ConfigMap is still there")
	}
}

// TestChangedSkipsTheUnchangedWrite: a ledger read and left as it was is
// not Changed, one edited or never written is.
func TestChangedSkipsTheUnchangedWrite(t *testing.T) {
	ctx := context.Background()
	client, ns := apiServer(t)
	s := New(client, ns)
	l, v, err := s.Get(ctx, "platform/manifests")
	if err != nil {
		t.Fatal(err)
	}
	if !v.Changed(l) {
		t.Error("a ledger never written is not Changed: nothing would create it")
	}
	l.Track("prod", "r.example/web").Pinned = "sha256:aa"
	if _, err := s.Put(ctx, "platform/manifests", l, v); err != nil {
		t.Fatal(err)
	}
	l, v, err = s.Get(ctx, "platform/manifests")
	if err != nil {
		t.Fatal(err)
	}
	if v.Changed(l) {
		t.Error("the ledger as read is Changed")
	}
	l.Track("prod", "r.example/web").Proven = "sha256:aa"
	if !v.Changed(l) {
		t.Error("an edited ledger is not Changed")
	}
}
