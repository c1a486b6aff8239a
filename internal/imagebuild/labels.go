package imagebuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/redact"
)

// Labels returns the OCI labels for an image built from revision (a commit
// SHA) of the repository at source (a URL), at version.
func Labels(revision, source, version string) map[string]string {
	return map[string]string{
		LabelRevision: revision,
		LabelSource:   source,
		LabelVersion:  version,
	}
}

// GitFacts are what the labels say about the source tree.
type GitFacts struct {
	// Revision is HEAD's commit SHA.
	Revision string
	// Source is the URL of the remote origin without user information, or
	// "" when there is no origin.
	Source string
	// Version is `git describe --tags --always --dirty`.
	Version string
}

// Git reads the facts of the git work tree at dir with the git command.
func Git(ctx context.Context, dir string) (GitFacts, error) {
	var f GitFacts
	var err error
	if f.Revision, err = git(ctx, dir, "rev-parse", "HEAD"); err != nil {
		return GitFacts{}, err
	}
	if f.Version, err = git(ctx, dir, "describe", "--tags", "--always", "--dirty"); err != nil {
		return GitFacts{}, err
	}
	src, err := git(ctx, dir, "remote", "get-url", "origin")
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		// No remote named origin: the caller must name the source.
	case err != nil:
		return GitFacts{}, err
	default:
		f.Source = redact.URL(src)
	}
	return f, nil
}

// git runs git with args in dir and returns its trimmed output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, redact.String(strings.TrimSpace(stderr.String())))
	}
	return strings.TrimSpace(string(out)), nil
}

// Annotations returns the OCI annotations of the index and its images:
// the labels' facts, the creation time, the title and the license.
func Annotations(revision, source, version string, created time.Time) map[string]string {
	a := map[string]string{
		"org.opencontainers.image.title":       "pinbot",
		"org.opencontainers.image.description": "Promote image digests through Gitea pull requests and prove the cluster runs them",
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.created":     created.UTC().Format(time.RFC3339),
		LabelVersion:                           version,
	}
	if revision != "" {
		a[LabelRevision] = revision
	}
	if source != "" {
		a[LabelSource] = source
	}
	return a
}
