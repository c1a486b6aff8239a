package serve

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
	"pinbot.dev/pinbot/reconciler"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/trust"
	"pinbot.dev/pinbot/trust/policy"
	"pinbot.dev/pinbot/trust/trusttest"
)

// TestPromoteRefusedBySignaturePolicy: serve's own signatures: policy
// (the operator's, keys beside the config) refuses a pushed image that
// its key did not sign; nothing is pushed, and the refusal reaches the
// log, the refusal counter and the release ledger the dashboard shows.
// Signed, the same image is promoted. On the real Gitea, registry and
// API server (the ledger in a namespace of the test's own).
func TestPromoteRefusedBySignaturePolicy(t *testing.T) {
	cluster, kc, ns := plane.Namespace(t)
	srv := giteatest.Start(t, gitea.Options{})
	r := giteatest.NewManifestRepo(t, srv)
	key := trusttest.NewKey(t, trusttest.ECDSA)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	for file, body := range map[string]string{tokenFile: srv.Token, filepath.Join(dir, "keys", "cosign.pub"): string(key.PublicPEM(t))} {
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	repo := r.Owner + "/" + r.Name
	cfg := &Config{
		Config: config.Config{
			StateNamespace: ns,
			Forge:          &config.ForgeConfig{URL: srv.URL, TokenFile: tokenFile},
			Signatures:     policy.Rules{{Images: []string{r.App}, Keys: []string{"keys/cosign.pub"}}},
		},
		Promote: []Target{{Repo: repo, Images: []string{r.App}}},
	}
	cfg.ResolvePaths(dir)
	rc, err := reconciler.New(&cfg.Config, cluster.Config(), reconciler.WithCacheDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	d, err := newDaemon(cfg, rc, kc, Options{Dashboard: true, Secret: []byte("s")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	v2 := r.Push(t, "v2")
	_, err = d.promote.promoteImage(ctx, cfg.Promote[0], r.App, "v2")
	var refusal *trust.Refusal
	if !errors.As(err, &refusal) || refusal.Digest != v2 || refusal.Rule != "signatures[0]" {
		t.Fatalf("promoting an unsigned push: %v; want the refusal of %s by signatures[0]", err, v2)
	}
	if n := testutil.ToFloat64(d.refusals.WithLabelValues(repo, "signatures[0]")); n != 1 {
		t.Errorf("pinbot_promotions_refused_total = %v, want 1", n)
	}
	l, _, err := d.release.Ledgers().Get(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Events) != 1 || l.Events[0].Image != r.App || !strings.Contains(l.Events[0].What, "refused "+v2+": signatures[0]: no signature found") {
		t.Errorf("ledger events = %+v; want the refusal", l.Events)
	}
	rec := httptest.NewRecorder()
	d.mux(true).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/releases", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "refused "+v2) {
		t.Errorf("the dashboard's release page (%d) does not show the refusal:\n%s", rec.Code, rec.Body.String())
	}
	c, err := srv.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if branches, _, err := c.ListRepoBranches(r.Owner, r.Name, sdk.ListRepoBranchesOptions{}); err != nil || len(branches) != 1 {
		t.Errorf("branches after a refusal: %d (%v); want only main", len(branches), err)
	}

	trusttest.Sign(t, r.App+"@"+v2, key, remote.WithAuth(&authn.Basic{Username: srv.AdminUser, Password: srv.Token}))
	res, err := d.promote.promoteImage(ctx, cfg.Promote[0], r.App, "v2")
	if err != nil || !strings.HasPrefix(res, "opened ") {
		t.Fatalf("promoting the signed push: %q, %v", res, err)
	}
}
