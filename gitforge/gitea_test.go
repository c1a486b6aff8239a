package gitforge_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/gitea/giteatest"
)

func newGitea(t *testing.T, srv *gitea.Server) *gitforge.Gitea {
	t.Helper()
	g, err := gitforge.NewGitea(srv.URL, srv.Token)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// pushBranch pushes a commit on top of main to branch, changing f.yaml.
func pushBranch(t *testing.T, srv *gitea.Server, repo gitforge.Repo, branch, content string) string {
	t.Helper()
	sha, err := srv.Commit(context.Background(), repo.Owner, repo.Name, "main", branch, map[string]string{"f.yaml": content}, "change f")
	if err != nil {
		t.Fatal(err)
	}
	return sha
}

func TestParseRepo(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    gitforge.Repo
		wantErr bool
	}{
		{in: "org/manifests", want: gitforge.Repo{Owner: "org", Name: "manifests"}},
		{in: "org/manifests.git", want: gitforge.Repo{Owner: "org", Name: "manifests"}},
		{in: "manifests", wantErr: true},
		{in: "/manifests", wantErr: true},
		{in: "org/", wantErr: true},
		{in: "a/b/c", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := gitforge.ParseRepo(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseRepo(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseRepo(%q) (-want +got):\n%s", tc.in, diff)
			}
			if !tc.wantErr && got.String() != strings.TrimSuffix(tc.in, ".git") {
				t.Errorf("String() = %q", got.String())
			}
		})
	}
}

func TestPullLifecycle(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	g := newGitea(t, srv)
	repo, _ := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	head := pushBranch(t, srv, repo, "pinbot/all/app", "v: 1\n")

	if branch, err := g.DefaultBranch(ctx, repo); err != nil || branch != "main" {
		t.Fatalf("DefaultBranch = %q, %v; want main", branch, err)
	}
	if p, err := g.OpenPull(ctx, repo, "pinbot/all/app"); err != nil || p != nil {
		t.Fatalf("OpenPull before creation = %+v, %v; want none", p, err)
	}
	created, err := g.CreatePull(ctx, repo, gitforge.Pull{Head: "pinbot/all/app", Base: "main", Title: "Promote app", Body: "body v1"})
	if err != nil {
		t.Fatal(err)
	}
	want := gitforge.Pull{
		Number: created.Number, URL: srv.URL + "/" + repo.String() + "/pulls/" + strconv.FormatInt(created.Number, 10),
		Title: "Promote app", Body: "body v1", Head: "pinbot/all/app", Base: "main", HeadSHA: head, State: "open", Author: srv.AdminUser,
	}
	if diff := cmp.Diff(want, *created); diff != "" {
		t.Errorf("CreatePull (-want +got):\n%s", diff)
	}

	found, err := g.OpenPull(ctx, repo, "pinbot/all/app")
	if err != nil || found == nil {
		t.Fatalf("OpenPull = %+v, %v; want #%d", found, err, created.Number)
	}
	if found.Number != created.Number {
		t.Errorf("OpenPull found #%d, want #%d", found.Number, created.Number)
	}
	if p, err := g.OpenPull(ctx, repo, "pinbot/all/other"); err != nil || p != nil {
		t.Errorf("OpenPull of another head = %+v, %v; want none", p, err)
	}

	edited, err := g.EditPull(ctx, repo, created.Number, "Promote app to v2", "body v2")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Promote app to v2", "body v2"}, []string{edited.Title, edited.Body}); diff != "" {
		t.Errorf("EditPull (-want +got):\n%s", diff)
	}

	// Labels: created when missing, existing ones reused, no duplicates.
	if err := g.AddLabels(ctx, repo, created.Number, []string{"pinbot", "promotion"}); err != nil {
		t.Fatal(err)
	}
	if err := g.AddLabels(ctx, repo, created.Number, []string{"promotion", "env/staging"}); err != nil {
		t.Fatal(err)
	}
	reviewer, err := srv.CreateUser(ctx, giteatest.Name(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.RequestReviewers(ctx, repo, created.Number, []string{reviewer.Name}); err != nil {
		t.Fatal(err)
	}
	got, err := g.GetPull(ctx, repo, created.Number)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got.Labels)
	if diff := cmp.Diff([]string{"env/staging", "pinbot", "promotion"}, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{reviewer.Name}, got.Reviewers); diff != "" {
		t.Errorf("reviewers (-want +got):\n%s", diff)
	}
	c, err := srv.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	labels, _, err := c.ListRepoLabels(repo.Owner, repo.Name, sdk.ListLabelsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(labels) != 3 {
		t.Errorf("repository has %d labels, want 3 (no duplicates)", len(labels))
	}
	for _, l := range labels {
		if l.Color == "" {
			t.Errorf("label %q has no colour", l.Name)
		}
	}

	if err := g.Comment(ctx, repo, created.Number, "first comment"); err != nil {
		t.Fatal(err)
	}
	if err := g.ClosePull(ctx, repo, created.Number, "Superseded by a newer digest."); err != nil {
		t.Fatal(err)
	}
	comments, err := g.Comments(ctx, repo, created.Number)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"first comment", "Superseded by a newer digest."}, comments); diff != "" {
		t.Errorf("comments (-want +got):\n%s", diff)
	}
	if p, err := g.OpenPull(ctx, repo, "pinbot/all/app"); err != nil || p != nil {
		t.Errorf("OpenPull after ClosePull = %+v, %v; want none", p, err)
	}
	closed, err := g.ListPulls(ctx, repo, gitforge.StateClosed)
	if err != nil {
		t.Fatal(err)
	}
	if len(closed) != 1 || closed[0].Number != created.Number || closed[0].State != "closed" || closed[0].Merged {
		t.Errorf("ListPulls(closed) = %+v, want #%d closed unmerged", closed, created.Number)
	}
	if _, err := g.ListPulls(ctx, repo, "merged"); err == nil {
		t.Error("ListPulls with an unknown state succeeded")
	}
}

func TestStatuses(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	g := newGitea(t, srv)
	repo, sha := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	for _, st := range []gitforge.Status{
		{Context: "pinbot/staging", State: commitstatus.Pending, Description: "rolling out"},
		{Context: "pinbot/prod", State: commitstatus.Failure, Description: "image mismatch", TargetURL: "http://example.com/prod"},
		{Context: "pinbot/staging", State: commitstatus.Success, Description: "running the pinned digests"},
	} {
		if err := g.SetStatus(ctx, repo, sha, st); err != nil {
			t.Fatal(err)
		}
	}
	got, err := g.Statuses(ctx, repo, sha)
	if err != nil {
		t.Fatal(err)
	}
	want := []gitforge.Status{
		{Context: "pinbot/prod", State: "failure", Description: "image mismatch", TargetURL: "http://example.com/prod", Creator: srv.AdminUser},
		{Context: "pinbot/staging", State: "success", Description: "running the pinned digests", Creator: srv.AdminUser},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Statuses (-want +got):\n%s", diff)
	}
	if err := g.SetStatus(ctx, repo, sha, gitforge.Status{Context: "x", State: "done"}); err == nil {
		t.Error("SetStatus with an unknown state succeeded")
	}
}

func TestPullByMergeCommit(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	g := newGitea(t, srv)
	repo, base := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	pushBranch(t, srv, repo, "pinbot/all/app", "v: 1\n")
	pr, err := g.CreatePull(ctx, repo, gitforge.Pull{Head: "pinbot/all/app", Base: "main", Title: "Promote app"})
	if err != nil {
		t.Fatal(err)
	}
	merge, err := srv.MergePull(ctx, repo.Owner, repo.Name, pr.Number)
	if err != nil {
		t.Fatal(err)
	}
	got, err := g.PullByMergeCommit(ctx, repo, merge)
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Number != pr.Number || !got.Merged || got.MergeCommit != merge {
		t.Errorf("PullByMergeCommit(%s) = %+v, want #%d merged as it", merge, got, pr.Number)
	}
	if got, err := g.PullByMergeCommit(ctx, repo, base); err != nil || got != nil {
		t.Errorf("PullByMergeCommit of a plain commit = %+v, %v; want none", got, err)
	}
	if p, err := g.OpenPull(ctx, repo, "pinbot/all/app"); err != nil || p != nil {
		t.Errorf("OpenPull after merge = %+v, %v; want none", p, err)
	}
}

// TestInvalidToken checks that a bad token gives a clear error that never
// contains the token, from the API and from Git.
func TestInvalidToken(t *testing.T) {
	srv := giteatest.Server(t)
	ctx := context.Background()
	repo, _ := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	const bad = "0123456789abcdef0123456789abcdef01234567"
	g, err := gitforge.NewGitea(srv.URL, bad, gitforge.WithTokenSource("--token-file ./token"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.DefaultBranch(ctx, repo)
	if err == nil {
		t.Fatal("DefaultBranch with a bad token succeeded")
	}
	t.Logf("error: %s", err)
	var apiErr *gitforge.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || !errors.Is(err, gitforge.ErrUnauthorized) {
		t.Errorf("error = %#v, want an *APIError with status 401 matching ErrUnauthorized", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "Gitea rejected the token from --token-file ./token (401") || strings.Contains(msg, bad) {
		t.Errorf("error = %q, want a 401 message without the token", msg)
	}

	c, _ := gitforge.NewCache("")
	r, _ := c.Repository(srv.RepoURL(repo.Owner, repo.Name))
	_, err = r.Fetch(ctx, "main", gitforge.Auth{Token: bad})
	if err == nil || strings.Contains(err.Error(), bad) || !errors.Is(err, gitforge.ErrUnauthorized) {
		t.Errorf("Fetch with a bad token = %v, want ErrUnauthorized without the token", err)
	}
}

func TestNewGiteaErrors(t *testing.T) {
	for _, url := range []string{"", "gitea.example.com", "ftp://gitea.example.com", "https://user:secret-pass@gitea.example.com"} {
		t.Run(url, func(t *testing.T) {
			_, err := gitforge.NewGitea(url, "token")
			if err == nil {
				t.Fatalf("NewGitea(%q) succeeded", url)
			}
			if strings.Contains(err.Error(), "secret-pass") {
				t.Errorf("error leaks the URL password: %s", err)
			}
		})
	}
}

// TestConcurrentCalls runs API calls from many goroutines on one Gitea
// client, each with its own context; run with -race.
func TestConcurrentCalls(t *testing.T) {
	srv := giteatest.Server(t)
	g := newGitea(t, srv)
	repo, sha := newRepo(t, srv, map[string]string{"f.yaml": "v: 0\n"})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if _, err := g.DefaultBranch(ctx, repo); err != nil {
				errs <- err
			}
			st := gitforge.Status{Context: "ctx/" + strconv.Itoa(i), State: commitstatus.Success}
			if err := g.SetStatus(ctx, repo, sha, st); err != nil {
				errs <- err
			}
		}()
	}
	// A cancelled context fails its own call only.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.DefaultBranch(ctx, repo); !errors.Is(err, context.Canceled) {
		t.Errorf("DefaultBranch with a cancelled context = %v, want context.Canceled", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, err := g.Statuses(context.Background(), repo, sha)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 8 {
		t.Errorf("got %d statuses, want 8", len(got))
	}
}
