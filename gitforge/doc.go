// Package gitforge talks to the two halves of a Git forge pinbot needs: the
// Git repository itself (a shallow, single-branch working copy on disk that
// pinbot edits, commits and pushes, with go-git) and the Gitea API around it
// (pull requests, labels, reviewers, comments and commit statuses, with the
// Gitea SDK).
//
// Tokens travel as HTTP basic auth for Git and as an API token for Gitea.
// Both are registered with internal/redact, so no error this package returns
// carries them, and neither follows a redirect to another origin (scheme,
// host and port). The package also owns the rest of what pinbot knows about
// a forge: the clone URL of a repository and its inverse (CloneURL,
// RepoOf), reading the Gitea token (ResolveToken), and which URLs would carry a
// token in clear (internal/loopback). The package exports concrete types; consumers declare the
// small interfaces they need where they use them.
package gitforge
