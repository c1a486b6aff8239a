package serve

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/lru"

	"pinbot.dev/pinbot/gitforge"
)

// MaxWebhookBody is the largest webhook body the webhook endpoint reads.
const MaxWebhookBody = 1 << 20

// PushEvent is the part of Gitea's push webhook payload (GitHub's shape)
// pinbot reads.
type PushEvent struct {
	// Ref is the pushed ref, e.g. "refs/heads/main".
	Ref string `json:"ref"`
	// After is the commit the ref now points to.
	After      string `json:"after"`
	Repository struct {
		CloneURL string `json:"clone_url"`
		HTMLURL  string `json:"html_url"`
		FullName string `json:"full_name"`
	} `json:"repository"`
}

// Branch is the branch Ref names, or "" when Ref is not a branch (a tag).
func (p PushEvent) Branch() string {
	b, ok := strings.CutPrefix(p.Ref, "refs/heads/")
	if !ok {
		return ""
	}
	return b
}

// ParsePush decodes a push payload. The error names what is wrong: not
// JSON, no ref, or no repository URL.
func ParsePush(body []byte) (PushEvent, error) {
	var p PushEvent
	if err := json.Unmarshal(body, &p); err != nil {
		return PushEvent{}, fmt.Errorf("decoding the push payload: %w", err)
	}
	switch {
	case p.Ref == "":
		return PushEvent{}, errors.New("push payload: no ref")
	case p.Repository.CloneURL == "" && p.Repository.HTMLURL == "":
		return PushEvent{}, errors.New("push payload: no repository.clone_url or repository.html_url")
	}
	return p, nil
}

// ValidSignature reports whether sig, the X-Gitea-Signature header, is the
// hex HMAC-SHA256 of body with secret. An empty secret matches nothing.
// The comparison takes constant time.
func ValidSignature(secret, body []byte, sig string) bool {
	if len(secret) == 0 || sig == "" {
		return false
	}
	got, err := hex.DecodeString(strings.TrimSpace(sig))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(mac.Sum(nil), got)
}

// Gitea webhook event types pinbot acts on (X-Gitea-Event-Type).
const (
	EventPush        = "push"
	EventPullRequest = "pull_request"
	EventPackage     = "package"
)

// EventType is the event a Gitea delivery carries: X-Gitea-Event-Type,
// else X-Gitea-Event. Older Gitea versions sent package events with an
// empty X-Gitea-Event (go-gitea/gitea #33244), so with both headers empty a
// body that has a "package" object is a package event; anything else
// without a header is taken as a push, as before.
func EventType(eventType, event string, body []byte) string {
	if eventType != "" {
		return eventType
	}
	if event != "" {
		return event
	}
	var probe struct {
		Package json.RawMessage `json:"package"`
	}
	if json.Unmarshal(body, &probe) == nil && len(probe.Package) > 0 && string(probe.Package) != "null" {
		return EventPackage
	}
	return EventPush
}

// PullRequestEvent is the part of Gitea's pull_request payload pinbot reads.
type PullRequestEvent struct {
	Action      string `json:"action"`
	Number      int64  `json:"number"`
	PullRequest struct {
		Number         int64  `json:"number"`
		HTMLURL        string `json:"html_url"`
		Title          string `json:"title"`
		Body           string `json:"body"`
		Merged         bool   `json:"merged"`
		MergeCommitSHA string `json:"merge_commit_sha"`
		Head           struct {
			Ref string `json:"ref"`
		} `json:"head"`
		Base struct {
			Ref string `json:"ref"`
		} `json:"base"`
	} `json:"pull_request"`
	Repository struct {
		CloneURL string `json:"clone_url"`
		HTMLURL  string `json:"html_url"`
		FullName string `json:"full_name"`
	} `json:"repository"`
}

// ParsePullRequest decodes a pull_request payload; the error names what
// is wrong.
func ParsePullRequest(body []byte) (PullRequestEvent, error) {
	var p PullRequestEvent
	if err := json.Unmarshal(body, &p); err != nil {
		return PullRequestEvent{}, fmt.Errorf("decoding the pull_request payload: %w", err)
	}
	if p.Repository.CloneURL == "" && p.Repository.HTMLURL == "" {
		return PullRequestEvent{}, errors.New("pull_request payload: no repository.clone_url or repository.html_url")
	}
	return p, nil
}

// MergedPush is the push a merged pull request amounts to (its base branch
// moved to the merge commit), and ok is false when p is not a merge: only
// "closed" with merged true is.
func (p PullRequestEvent) MergedPush() (push PushEvent, ok bool) {
	if p.Action != "closed" || !p.PullRequest.Merged || p.PullRequest.Base.Ref == "" {
		return PushEvent{}, false
	}
	push.Ref = "refs/heads/" + p.PullRequest.Base.Ref
	push.After = p.PullRequest.MergeCommitSHA
	push.Repository.CloneURL = p.Repository.CloneURL
	push.Repository.HTMLURL = p.Repository.HTMLURL
	push.Repository.FullName = p.Repository.FullName
	return push, true
}

// Pull is the pull request as gitforge describes it.
func (p PullRequestEvent) Pull() *gitforge.Pull {
	n := p.PullRequest.Number
	if n == 0 {
		n = p.Number
	}
	return &gitforge.Pull{
		Number: n, URL: p.PullRequest.HTMLURL, Title: p.PullRequest.Title, Body: p.PullRequest.Body,
		Head: p.PullRequest.Head.Ref, Base: p.PullRequest.Base.Ref, State: "closed",
		Merged: p.PullRequest.Merged, MergeCommit: p.PullRequest.MergeCommitSHA,
	}
}

// PackageEvent is the part of Gitea's package payload pinbot reads. It
// carries no digest: Version is the pushed tag, or a digest for the
// untagged manifests of a multi-arch push.
type PackageEvent struct {
	Action  string `json:"action"`
	Package struct {
		Type    string `json:"type"`
		Name    string `json:"name"`
		Version string `json:"version"`
		HTMLURL string `json:"html_url"`
		Owner   struct {
			Login    string `json:"login"`
			UserName string `json:"username"`
		} `json:"owner"`
	} `json:"package"`
}

// ParsePackage decodes a package payload; the error names what is wrong.
func ParsePackage(body []byte) (PackageEvent, error) {
	var p PackageEvent
	if err := json.Unmarshal(body, &p); err != nil {
		return PackageEvent{}, fmt.Errorf("decoding the package payload: %w", err)
	}
	if p.Package.Name == "" || p.Package.Version == "" {
		return PackageEvent{}, errors.New("package payload: no package.name or package.version")
	}
	return p, nil
}

// Image is the container repository the event names (host/owner/name,
// the host taken from the package's web URL), and Tag the pushed tag. ok
// is false for anything that should not promote: another package type,
// another action, or an untagged (digest) version.
func (p PackageEvent) Image() (image, tag string, ok bool) {
	if p.Package.Type != "container" || (p.Action != "" && p.Action != "created") {
		return "", "", false
	}
	v := p.Package.Version
	if strings.HasPrefix(v, "sha256:") || strings.Contains(v, "@") {
		return "", "", false
	}
	u, err := url.Parse(p.Package.HTMLURL)
	if err != nil || u.Host == "" {
		return "", "", false
	}
	owner := p.Package.Owner.Login
	if owner == "" {
		owner = p.Package.Owner.UserName
	}
	if owner == "" {
		return "", "", false
	}
	return strings.ToLower(u.Host + "/" + owner + "/" + p.Package.Name), v, true
}

// maxDeliveries bounds the X-Gitea-Delivery IDs and body digests
// remembered for deduplication.
const maxDeliveries = 1024

// ReplayWindow is how long a signed webhook body is remembered: the same
// body again within it is a replay, whatever its X-Gitea-Delivery says
// (none, or a fresh one), and starts nothing. Gitea's own deliveries of
// new events differ in their body (a new commit, a package's creation
// time).
const ReplayWindow = 10 * time.Minute

// deliveries remembers recent X-Gitea-Delivery IDs, and the digests of
// recent bodies for ReplayWindow, in a bounded LRU.
type deliveries struct {
	mu   sync.Mutex // makes Get-then-Add one step
	seen *lru.Cache
	now  func() time.Time
}

func newDeliveries(size int) *deliveries { return &deliveries{seen: lru.New(size), now: time.Now} }

// first reports whether a delivery is new: neither its id nor, within
// ReplayWindow, its body was seen. It remembers both. An empty id counts
// only its body.
func (d *deliveries) first(id string, body []byte) bool {
	sum := sha256.Sum256(body)
	byBody := "body:" + hex.EncodeToString(sum[:])
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	if id != "" {
		if _, ok := d.seen.Get("id:" + id); ok {
			return false
		}
	}
	if at, ok := d.seen.Get(byBody); ok && now.Sub(at.(time.Time)) < ReplayWindow {
		return false
	}
	if id != "" {
		d.seen.Add("id:"+id, now)
	}
	d.seen.Add(byBody, now)
	return true
}
