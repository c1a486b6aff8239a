package store

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/release"
)

// configMapGets counts the GETs of one ConfigMap a client sends.
type configMapGets struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c configMapGets) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/configmaps/") && req.URL.Query().Get("watch") == "" {
		c.n.Add(1)
	}
	return c.next.RoundTrip(req)
}

// TestReadAnswersFromTheWatch: the readers that ask on every request (a
// flood of admission reviews among them) read the ledgers from a watch,
// not with a GET each, and still see what this store just wrote and what
// a ConfigMap writer changed.
func TestReadAnswersFromTheWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, mallory, c := configMapWriterOn(t, "pinbot-system")
	var gets atomic.Int64
	cfg := rest.CopyConfig(c.Config())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return configMapGets{rt, &gets} })
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const repo, img = "acme/manifests", "r.example/web"
	s := New(client, "pinbot-system")
	hold := func(digest string) {
		t.Helper()
		if err := s.Update(ctx, repo, func(l *release.Ledger) error {
			l.Holds = append(l.Holds, release.Hold{Env: "prod", Image: img, Digest: digest, Reason: "crash loop", Since: time.Now()})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	hold("sha256:0bad")
	go s.Watch(ctx)
	poll.True(t, 30*time.Second, "the watch's first list", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.lister != nil
	})

	before := gets.Load()
	for range 200 {
		l, err := s.Read(ctx, repo)
		if err != nil || l.Held("prod", img, "sha256:0bad") == nil {
			t.Fatalf("Read: %v, %+v; want the ledger with its hold", err, l)
		}
	}
	if n := gets.Load() - before; n > 1 {
		t.Errorf("200 reads sent %d GETs of a ConfigMap; want at most the mark's one", n)
	}

	// What this store writes is read at once, the watch behind or not.
	hold("sha256:0bad2")
	if l, err := s.Read(ctx, repo); err != nil || l.Held("prod", img, "sha256:0bad2") == nil {
		t.Errorf("Read just after a write: %v; want the new hold", err)
	}

	// A ConfigMap writer's edit is refused as soon as the watch has it.
	cm, err := mallory.CoreV1().ConfigMaps("pinbot-system").Get(ctx, Name(repo), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[ledgerKey] = strings.ReplaceAll(cm.Data[ledgerKey], "sha256:0bad", "sha256:0ther")
	if _, err := mallory.CoreV1().ConfigMaps("pinbot-system").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll.True(t, 30*time.Second, "Read refusing the edited ledger", func() bool {
		_, err := s.Read(ctx, repo)
		return errors.Is(err, ErrTampered)
	})
}
