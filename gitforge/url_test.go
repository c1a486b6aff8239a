package gitforge_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/gitforge"
)

func TestCloneURL(t *testing.T) {
	repo := gitforge.Repo{Owner: "org", Name: "manifests"}
	for _, tc := range []struct {
		name, base, want, err string
	}{
		{name: "host", base: "https://gitea.example", want: "https://gitea.example/org/manifests.git"},
		{name: "trailing slash", base: "https://gitea.example/", want: "https://gitea.example/org/manifests.git"},
		{name: "port", base: "http://127.0.0.1:3000", want: "http://127.0.0.1:3000/org/manifests.git"},
		{name: "sub-path", base: "https://git.example/gitea", want: "https://git.example/gitea/org/manifests.git"},
		{name: "sub-path with trailing slash", base: "https://git.example/gitea/", want: "https://git.example/gitea/org/manifests.git"},
		{name: "no scheme", base: "gitea.example", err: "want http(s)://host[:port][/path]"},
		{name: "credentials", base: "https://u:secret-pass@gitea.example", err: "credentials belong in the token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := gitforge.CloneURL(tc.base, repo)
			if gotErr := errString(err); tc.err == "" && err != nil || !strings.Contains(gotErr, tc.err) {
				t.Fatalf("CloneURL(%q) error = %q, want %q", tc.base, gotErr, tc.err)
			}
			if strings.Contains(errString(err), "secret-pass") {
				t.Errorf("error leaks the password: %s", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CloneURL(%q) (-want +got):\n%s", tc.base, diff)
			}
			if err != nil {
				return
			}
			g, err := gitforge.NewGitea(tc.base, "")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, g.CloneURL(repo)); diff != "" {
				t.Errorf("Gitea.CloneURL (-want +got):\n%s", diff)
			}
			back, err := gitforge.RepoOf(tc.base, got)
			if err != nil || back != repo {
				t.Errorf("RepoOf(CloneURL) = %v, %v; want %v", back, err, repo)
			}
		})
	}
}

func TestRepoOf(t *testing.T) {
	manifests := gitforge.Repo{Owner: "org", Name: "manifests"}
	for _, tc := range []struct {
		name, base, url string
		want            gitforge.Repo
		err             string
	}{
		{name: ".git suffix", base: "https://gitea.example", url: "https://gitea.example/org/manifests.git", want: manifests},
		{name: "no .git suffix", base: "https://gitea.example", url: "https://gitea.example/org/manifests", want: manifests},
		{name: "trailing slash on the URL", base: "https://gitea.example", url: "https://gitea.example/org/manifests/", want: manifests},
		{name: "trailing slash on the base", base: "https://gitea.example/", url: "https://gitea.example/org/manifests.git", want: manifests},
		{name: "host in another case", base: "https://Gitea.Example", url: "https://gitea.example/org/manifests.git", want: manifests},
		{name: "sub-path", base: "https://git.example/gitea", url: "https://git.example/gitea/org/manifests.git", want: manifests},
		{name: "sub-path with trailing slash", base: "https://git.example/gitea/", url: "https://git.example/gitea/org/manifests.git", want: manifests},
		{name: "other scheme and a user", base: "https://gitea.example", url: "ssh://git@gitea.example/org/manifests.git", want: manifests},
		{name: "another host", base: "https://gitea.example", url: "https://other.example/org/manifests.git", err: "is not on the forge https://gitea.example: another host"},
		{name: "another port", base: "http://127.0.0.1:3000", url: "http://127.0.0.1:3001/org/manifests.git", err: "another host"},
		{name: "outside the sub-path", base: "https://git.example/gitea/", url: "https://git.example/org/manifests.git", err: "its path is not under /gitea/"},
		{name: "sub-path as a name prefix", base: "https://git.example/gitea", url: "https://git.example/gitea2/org/manifests.git", err: "its path is not under /gitea/"},
		{name: "no name", base: "https://gitea.example", url: "https://gitea.example/org", err: "want /OWNER/NAME[.git]"},
		{name: "too deep", base: "https://gitea.example", url: "https://gitea.example/org/manifests/src/main", err: "want /OWNER/NAME[.git]"},
		{name: "bad base", base: "gitea.example", url: "https://gitea.example/org/manifests.git", err: "want http(s)://host"},
		{name: "unparsable URL", base: "https://gitea.example", url: "https://gitea.example/%zz", err: "repository URL"},
		{name: "password is not echoed", base: "https://gitea.example", url: "https://u:secret-pass@other.example/org/manifests.git", err: "another host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := gitforge.RepoOf(tc.base, tc.url)
			if gotErr := errString(err); tc.err == "" && err != nil || !strings.Contains(gotErr, tc.err) {
				t.Fatalf("RepoOf(%q, %q) error = %q, want %q", tc.base, tc.url, gotErr, tc.err)
			}
			if strings.Contains(errString(err), "secret-pass") {
				t.Errorf("error leaks the password: %s", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("RepoOf(%q, %q) (-want +got):\n%s", tc.base, tc.url, diff)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
