package promote

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/faultproxy"
	"pinbot.dev/pinbot/promote/pr"
)

// TestStalledForge puts a fault proxy in front of the real Gitea (API and
// Git): a forge that accepts connections and never answers fails the
// promotion within the bound instead of hanging it, one that answers 503
// fails it at once, and through the passing proxy the promotion works.
func TestStalledForge(t *testing.T) {
	f := newFixture(t)
	app := f.image("app")
	d1 := f.pushImage(app, "1", time.Time{})
	f.createRepo(map[string]string{"app.yaml": fmt.Sprintf("image: %s:1@%s\n", app, d1)})
	d2 := f.pushImage(app, "2", time.Time{})
	u, err := url.Parse(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	px := faultproxy.Start(t, u.Host, faultproxy.Stall)
	proxied := "http://" + px.Addr()
	env := f.env()
	if env.Forge, err = gitforge.NewGitea(proxied, f.srv.Token); err != nil {
		t.Fatal(err)
	}
	env.CloneURL = strings.Replace(f.srv.RepoURL(f.owner, f.name), f.srv.URL, proxied, 1)
	env.Base = "main" // straight to the Git clone: the API client was bounded already
	req := Request{Inputs: []Input{{Image: app, Tags: []string{"2"}, Digest: d2, Source: pr.SourceDigestFile, File: "digest.txt"}}}

	for _, tc := range []struct {
		mode  faultproxy.Mode
		bound time.Duration
	}{
		{faultproxy.Stall, 2*gitforge.ResponseTimeout + time.Minute},
		{faultproxy.Fail, time.Minute},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			px.SetMode(tc.mode)
			// The test's own deadline is far past the bound: hitting it
			// means pinbot hung.
			ctx, cancel := context.WithTimeout(testContext(t), 3*tc.bound)
			defer cancel()
			start := time.Now()
			_, err := Run(ctx, env, req)
			took := time.Since(start)
			switch {
			case ctx.Err() != nil:
				t.Fatalf("promotion against a forge that does not answer hung for %s", took)
			case err == nil:
				t.Fatalf("promotion against a %s forge succeeded", tc.mode)
			case took > tc.bound:
				t.Errorf("promotion against a %s forge failed after %s, want within %s: %s", tc.mode, took, tc.bound, err)
			}
			t.Logf("%s forge: failed after %s: %s", tc.mode, took.Round(time.Millisecond), err)
			if prs := f.openPulls(); len(prs) != 0 {
				t.Errorf("%d open pull requests after the failed promotion, want none", len(prs))
			}
		})
	}

	px.SetMode(faultproxy.Pass)
	res, err := Run(testContext(t), env, req)
	if err != nil || len(res) != 1 || res[0].Status != StatusOpened {
		t.Fatalf("promotion through the passing proxy: %+v, %v; want one opened", res, err)
	}
}
