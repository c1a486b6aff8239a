package gitforge

import (
	"fmt"
	"net/url"
	"strings"

	"pinbot.dev/pinbot/internal/clip"
	"pinbot.dev/pinbot/internal/redact"
)

// Gitea serves every repository's Git at BASE/OWNER/NAME.git, BASE being
// the URL of its web UI and API (ROOT_URL). CloneURL and RepoOf are that
// rule and its inverse; no other package spells it out.

// parseBaseURL parses the base URL of a Gitea: http(s)://host[:port][/path],
// without credentials.
func parseBaseURL(baseURL string) (*url.URL, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("gitea URL %s: want http(s)://host[:port][/path]", clip.Quote(redact.URL(baseURL)))
	}
	if u.User != nil {
		return nil, fmt.Errorf("gitea URL %s: credentials belong in the token, not the URL", clip.Quote(redact.URL(baseURL)))
	}
	return u, nil
}

// CloneURL returns the URL Git clones repo from on the Gitea at baseURL:
// baseURL/OWNER/NAME.git, with or without a slash ending baseURL.
func CloneURL(baseURL string, repo Repo) (string, error) {
	u, err := parseBaseURL(baseURL)
	if err != nil {
		return "", err
	}
	return cloneURL(u, repo), nil
}

func cloneURL(base *url.URL, repo Repo) string {
	return base.JoinPath(repo.Owner, repo.Name+".git").String()
}

// CloneURL returns the URL Git clones repo from on this Gitea; see the
// package function CloneURL.
func (g *Gitea) CloneURL(repo Repo) string { return cloneURL(g.baseURL, repo) }

// GitAuth is how Git authenticates to this Gitea: its token and CA.
func (g *Gitea) GitAuth() Auth { return g.auth }

// RepoOf returns the repository that cloneURL names on the Gitea at
// baseURL; it is the inverse of CloneURL. The host and port must be
// baseURL's (in any case) and the path must lie under baseURL's path; the
// scheme and any user name are not compared, so an SSH clone URL of the
// same host matches too. The ".git" suffix and a trailing slash are
// optional. A URL of another host, or outside the base path, is an error.
func RepoOf(baseURL, cloneURL string) (Repo, error) {
	base, err := parseBaseURL(baseURL)
	if err != nil {
		return Repo{}, err
	}
	u, err := url.Parse(cloneURL)
	if err != nil {
		return Repo{}, fmt.Errorf("repository URL %s: %w", clip.Quote(redact.URL(cloneURL)), err)
	}
	if !strings.EqualFold(u.Host, base.Host) {
		return Repo{}, fmt.Errorf("repository URL %s is not on the forge %s: another host", redact.URL(cloneURL), redact.URL(baseURL))
	}
	prefix := strings.TrimSuffix(base.Path, "/") + "/"
	rest, ok := strings.CutPrefix(u.Path, prefix)
	if !ok {
		return Repo{}, fmt.Errorf("repository URL %s is not on the forge %s: its path is not under %s", redact.URL(cloneURL), redact.URL(baseURL), prefix)
	}
	repo, err := ParseRepo(strings.TrimSuffix(rest, "/"))
	if err != nil {
		return Repo{}, fmt.Errorf("repository URL %s: want %sOWNER/NAME[.git]", redact.URL(cloneURL), prefix)
	}
	return repo, nil
}

// RepoKey is a repository URL reduced to scheme://host/path for comparing
// two URLs of one repository: no credentials, host in lower case, no
// trailing "/" or ".git". It is "" when u is not an absolute URL.
func RepoKey(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || p.Scheme == "" || p.Host == "" {
		return ""
	}
	path := strings.TrimRight(p.Path, "/")
	path = strings.TrimSuffix(path, ".git")
	path = strings.TrimRight(path, "/")
	return strings.ToLower(p.Scheme) + "://" + strings.ToLower(p.Host) + path
}
