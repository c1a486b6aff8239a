package gitforge_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/testenv/filetree"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
)

// TestRemoteHead reads a branch's head on the real Gitea before and after
// another clone moves it, and checks the errors callers branch on.
func TestRemoteHead(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	repo, sha := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	url := srv.RepoURL(repo.Owner, repo.Name)
	auth := gitforge.Auth{Token: srv.Token}

	if got, err := gitforge.RemoteHead(ctx, url, "main", auth); err != nil || got != sha {
		t.Fatalf("RemoteHead = %s, %v; want %s", got, err, sha)
	}
	moved, err := srv.Commit(ctx, repo.Owner, repo.Name, "main", "main", map[string]string{"f.yaml": "v: 1\n"}, "move")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := gitforge.RemoteHead(ctx, url, "main", auth); err != nil || got != moved {
		t.Errorf("RemoteHead after the push = %s, %v; want %s", got, err, moved)
	}

	const badToken = "bad0token0that0must0not0leak"
	for _, tc := range []struct {
		name   string
		branch string
		auth   gitforge.Auth
		is     error
		want   string
	}{
		{name: "missing branch", branch: "nope", auth: auth, is: gitforge.ErrBranchNotFound, want: "nope"},
		{name: "invalid token", branch: "main", auth: gitforge.Auth{Token: badToken}, is: gitforge.ErrUnauthorized, want: "listing the branches"},
		{name: "missing CA file", branch: "main", auth: gitforge.Auth{Token: srv.Token, CAFile: filepath.Join(t.TempDir(), "ca.pem")}, want: "reading CA bundle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gitforge.RemoteHead(ctx, url, tc.branch, tc.auth)
			if err == nil {
				t.Fatal("RemoteHead succeeded, want an error")
			}
			t.Logf("RemoteHead: %s", err)
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("RemoteHead = %v, want errors.Is %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("RemoteHead = %q, want it to mention %q", err, tc.want)
			}
			if strings.Contains(err.Error(), badToken) || strings.Contains(err.Error(), srv.Token) {
				t.Errorf("error leaks the token: %s", err)
			}
		})
	}
}

// TestDefaultBranch reads the branch the remote's HEAD names, which is not
// always main.
func TestDefaultBranch(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	dir := t.TempDir()
	filetree.WriteFile(t, filepath.Join(dir, "f.yaml"), "v: 0\n")
	repo := gitforge.Repo{Owner: srv.AdminUser, Name: giteatest.Name(t)}
	if _, err := srv.CreateRepoFromDir(ctx, repo.Owner, repo.Name, "trunk", dir); err != nil {
		t.Fatal(err)
	}
	auth := gitforge.Auth{Token: srv.Token}
	if got, err := gitforge.DefaultBranch(ctx, srv.RepoURL(repo.Owner, repo.Name), auth); err != nil || got != "trunk" {
		t.Errorf("DefaultBranch = %q, %v; want trunk", got, err)
	}
	// A Fetch of "" fetches the default branch and names it; the cache
	// then holds it as the default branch, with no round trip.
	c, err := gitforge.NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Repository(srv.RepoURL(repo.Owner, repo.Name))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Cached(""); ok {
		t.Error("Cached before any fetch found a snapshot")
	}
	s, err := r.Fetch(ctx, "", auth)
	if err != nil || s.Branch() != "trunk" {
		t.Fatalf("Fetch of the default branch = %v, %v; want trunk's", s, err)
	}
	for _, b := range []string{"", "trunk"} {
		if cs, ok := r.Cached(b); !ok || cs.Commit() != s.Commit() || cs.Branch() != "trunk" {
			t.Errorf("Cached(%q) = %v, %v; want trunk at %s", b, cs, ok, s.Commit())
		}
	}
	heads, err := gitforge.RemoteHeads(ctx, srv.RepoURL(repo.Owner, repo.Name), auth, "trunk", "missing")
	if _, missing := heads["missing"]; err != nil || len(heads["trunk"]) != 40 || missing {
		t.Errorf("RemoteHeads = %v, %v; want trunk's head alone", heads, err)
	}
	if _, err := gitforge.DefaultBranch(ctx, srv.RepoURL(repo.Owner, repo.Name), gitforge.Auth{Token: "bad0token"}); !errors.Is(err, gitforge.ErrUnauthorized) {
		t.Errorf("DefaultBranch with a bad token = %v, want ErrUnauthorized", err)
	}
}

// TestRemoteReadsReuseConnections: every read of a remote goes through one
// shared transport, so 20 reads of a branch's head reuse one keep-alive
// connection to the real Gitea (counted by a loopback proxy in between)
// instead of leaving a transport and its idle connection behind each.
func TestRemoteReadsReuseConnections(t *testing.T) {
	srv := giteatest.Server(t)
	repo, sha := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	target, err := url.Parse(srv.RepoURL(repo.Owner, repo.Name))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var conns atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			up, err := net.Dial("tcp", target.Host)
			if err != nil {
				c.Close()
				continue
			}
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
	via := *target
	via.Host = ln.Addr().String()
	for i := range 20 {
		if got, err := gitforge.RemoteHead(context.Background(), via.String(), "main", gitforge.Auth{Token: srv.Token}); err != nil || got != sha {
			t.Fatalf("read %d: RemoteHead = %s, %v; want %s", i, got, err, sha)
		}
	}
	if n := conns.Load(); n > 2 {
		t.Errorf("20 reads opened %d connections, want them to reuse one", n)
	}
}
