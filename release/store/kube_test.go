package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/release"
)

// TestLedgersOnARealAPIServer runs the ledgers against a real
// kube-apiserver, which the fake clientset is not: it validates every
// ConfigMap name (the fake takes any string) and answers a write over a
// newer resourceVersion with a real conflict. Repositories whose names
// differ only in '/', '-', '_' and '.', and the longest names Gitea
// allows, each keep a ledger of their own, holds included; one spelled
// in other case is the same repository, as Gitea has it, and the same
// ledger.
func TestLedgersOnARealAPIServer(t *testing.T) {
	ctx := context.Background()
	client, ns := apiServer(t)
	s := New(client, ns)

	repos := []string{"acme/web-app", "acme-web/app", "acme/web_app", "acme/web.app",
		strings.Repeat("o", 40) + "/" + strings.Repeat("r.-_", 25)}
	for _, r := range repos {
		err := s.Update(ctx, r, func(l *release.Ledger) error {
			l.Holds = append(l.Holds, release.Hold{Env: "prod", Image: "r.example/web", Digest: "sha256:" + r})
			return nil
		})
		if err != nil {
			t.Fatalf("the ledger of %s: %s", r, err)
		}
	}
	for _, r := range repos {
		l, _, err := s.Get(ctx, r)
		if err != nil || len(l.Holds) != 1 || l.Holds[0].Digest != "sha256:"+r {
			t.Errorf("the ledger of %s holds %+v, %v; want its own hold only", r, l.Holds, err)
		}
	}
	err := s.Update(ctx, "Acme/Web.App", func(l *release.Ledger) error {
		if len(l.Holds) != 1 || l.Holds[0].Digest != "sha256:acme/web.app" {
			t.Errorf("Acme/Web.App reads holds %+v; want acme/web.app's", l.Holds)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	listed, err := s.Repositories(ctx)
	if err != nil || len(listed) != len(repos) {
		t.Errorf("Repositories = %q, %v; want the %d repositories", listed, err, len(repos))
	}

	// Two replicas read the same ledger; the second write meets the
	// first's.
	a, va, err := s.Get(ctx, repos[0])
	if err != nil {
		t.Fatal(err)
	}
	b, vb, err := s.Get(ctx, repos[0])
	if err != nil {
		t.Fatal(err)
	}
	a.Track("prod", "r.example/web").Pinned = "sha256:aa"
	if _, err := s.Put(ctx, repos[0], a, va); err != nil {
		t.Fatal(err)
	}
	b.Track("prod", "r.example/web").Pinned = "sha256:bb"
	if _, err := s.Put(ctx, repos[0], b, vb); !errors.Is(err, ErrConflict) {
		t.Errorf("a write over a newer ledger = %v, want ErrConflict", err)
	}
	if l, _, err := s.Get(ctx, repos[0]); err != nil || l.Lookup("prod", "r.example/web").Pinned != "sha256:aa" {
		t.Errorf("after the conflict the ledger pins %+v, %v; want the first write's", l.Lookup("prod", "r.example/web"), err)
	}
}

// TestCaller: the user the API server names in a SelfSubjectReview, for
// the admin and another user, and "unknown" when no server answers.
func TestCaller(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
	ctx := context.Background()
	c, err := kube.Start(ctx, kube.Options{Users: []kube.User{{Name: "alice"}}})
	if err != nil {
		t.Fatalf("starting the control plane: %s", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	alice, err := c.UserConfig("alice")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rc   *rest.Config
		want string
	}{
		{c.Config(), kube.AdminUser},
		{alice, "alice"},
		{&rest.Config{Host: "http://127.0.0.1:1"}, "unknown"},
	} {
		client, err := kubernetes.NewForConfig(tc.rc)
		if err != nil {
			t.Fatal(err)
		}
		if got := New(client, "pinbot-system").Caller(ctx); got != tc.want {
			t.Errorf("Caller as %s = %q, want %q", tc.want, got, tc.want)
		}
	}
}

// TestGateFailsClosedWithoutALedger: on a real API server, the gate a CLI
// reads through a kubeconfig refuses when it finds no ledger of the
// repository (another namespace, another cluster), naming where it
// looked; once serve wrote the ledger, it judges from it. Before, a
// missing ledger read as an empty one, which holds nothing: a forced
// promotion of a held digest went through.
func TestGateFailsClosedWithoutALedger(t *testing.T) {
	ctx := context.Background()
	client, ns := apiServer(t)
	_, other := apiServer(t)
	const repo, img, held = "acme/manifests", "r.example/web", "sha256:0bad"
	if err := New(client, ns).Update(ctx, repo, func(l *release.Ledger) error {
		l.Holds = append(l.Holds, release.Hold{Env: "prod", Image: img, Digest: held, Reason: "crash loop", Since: time.Now()})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	a := release.Admission{Env: "prod", Image: img, Digest: held, Force: true}
	err := Gate{Ledgers: New(client, other), Repo: repo}.Admit(ctx, a)
	if !errors.Is(err, ErrNoLedger) || !strings.Contains(err.Error(), other) {
		t.Errorf("the gate in a namespace without the ledger: %v, want ErrNoLedger naming the namespace", err)
	}
	var refusal *release.Refusal
	if err := (Gate{Ledgers: New(client, ns), Repo: repo}).Admit(ctx, a); !errors.As(err, &refusal) || refusal.Rule != release.RuleHeld {
		t.Errorf("the gate with the ledger: %v, want the hold's refusal", err)
	}
}
