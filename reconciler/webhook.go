package reconciler

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/logctx"
)

// MaxWebhookBody is the largest webhook body WebhookHandler reads.
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

// MatchApps returns the names of the apps, in config order, that follow
// the branch p pushed in the repository p names: the app's repo is p's
// clone URL or web URL, compared by scheme, host (case-insensitive) and
// path, without a trailing "/" or ".git" and without credentials.
func MatchApps(apps []App, p PushEvent) []string {
	branch := p.Branch()
	if branch == "" {
		return nil
	}
	var names []string
	for i := range apps {
		a := &apps[i]
		if a.Branch != branch {
			continue
		}
		repo := repoKey(a.Repo)
		if repo == "" {
			continue
		}
		if repo == repoKey(p.Repository.CloneURL) || repo == repoKey(p.Repository.HTMLURL) {
			names = append(names, a.Name)
		}
	}
	return names
}

// repoKey is a repository URL reduced to scheme://host/path for
// comparison, or "" when u is not an absolute URL.
func repoKey(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || p.Scheme == "" || p.Host == "" {
		return ""
	}
	path := strings.TrimRight(p.Path, "/")
	path = strings.TrimSuffix(path, ".git")
	path = strings.TrimRight(path, "/")
	return strings.ToLower(p.Scheme) + "://" + strings.ToLower(p.Host) + path
}

// webhookResponse is the body WebhookHandler answers a push with.
type webhookResponse struct {
	Triggered []string `json:"triggered"`
	// Promoting names the promote repositories a package event started a
	// promotion into.
	Promoting []string `json:"promoting,omitempty"`
}

// promoteTimeout bounds one webhook-started promotion.
const promoteTimeout = 5 * time.Minute

// WebhookOption configures WebhookHandler.
type WebhookOption func(*webhookOptions)

type webhookOptions struct {
	promoter ImagePromoter
	trigger  func(ctx context.Context, app string) error
}

// WithPromoter hands WebhookHandler what promotes the images of package
// events (see ImagePromoter). Without one, package events are ignored.
func WithPromoter(p ImagePromoter) WebhookOption {
	return func(o *webhookOptions) { o.promoter = p }
}

// WebhookTrigger makes the handler call f for each app a push matches,
// instead of Trigger; an app f fails for is left out of the answer (a
// follower of `pinbot serve --leader-elect` forwards it to the leader).
func WebhookTrigger(f func(ctx context.Context, app string) error) WebhookOption {
	return func(o *webhookOptions) { o.trigger = f }
}

// WebhookHandler serves Gitea webhooks. A POST whose X-Gitea-Signature is
// the hex HMAC-SHA256 of its body with secret is routed on its event type
// (see EventType):
//   - push triggers a full pass (see Trigger) of each app following the
//     pushed branch (see MatchApps);
//   - pull_request closed with merged true does the same for its base
//     branch, and remembers a pinbot pull request for the proof comment
//     on its merge commit;
//   - package, for a tagged container image a promote entry lists, starts
//     a promotion of that tag into each such entry's repository through
//     the ImagePromoter (see WithPromoter), in the background.
//
// It answers 202 with {"triggered":[names],"promoting":[repos]} when it
// started something, 200 with empty lists when not (no app follows the
// branch, another event, an untagged digest, or an X-Gitea-Delivery it has
// already seen: deliveries are deduplicated over the last 1024). It answers
// 405 to other methods, 413 to a body over MaxWebhookBody, 401 to a missing
// or bad signature (with an empty secret every request is refused) and 400
// to a payload it cannot parse. The secret is never logged or echoed.
func (r *Reconciler) WebhookHandler(secret []byte, opts ...WebhookOption) http.Handler {
	secret = append([]byte(nil), secret...)
	o := webhookOptions{trigger: func(_ context.Context, name string) error { return r.Trigger(name) }}
	for _, opt := range opts {
		opt(&o)
	}
	seen := newDeliveries(maxDeliveries)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			r.metrics.countWebhook(webhookMethodNotAllowed)
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "only POST is allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxWebhookBody))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				r.metrics.countWebhook(webhookTooLarge)
				http.Error(w, fmt.Sprintf("body over %d bytes", MaxWebhookBody), http.StatusRequestEntityTooLarge)
				return
			}
			r.metrics.countWebhook(webhookBadRequest)
			http.Error(w, "reading the body failed", http.StatusBadRequest)
			return
		}
		if !ValidSignature(secret, body, req.Header.Get("X-Gitea-Signature")) {
			r.metrics.countWebhook(webhookUnauthorized)
			http.Error(w, "missing or bad X-Gitea-Signature", http.StatusUnauthorized)
			return
		}
		ev := EventType(req.Header.Get("X-Gitea-Event-Type"), req.Header.Get("X-Gitea-Event"), body)
		var resp webhookResponse
		switch ev {
		case EventPush:
			p, err := ParsePush(body)
			if err != nil {
				r.metrics.countWebhook(webhookBadRequest)
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if !seen.first(req.Header.Get("X-Gitea-Delivery")) {
				break
			}
			resp.Triggered = r.triggerPush(req.Context(), o.trigger, p)
		case EventPullRequest:
			pr, err := ParsePullRequest(body)
			if err != nil {
				r.metrics.countWebhook(webhookBadRequest)
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			p, ok := pr.MergedPush()
			if !ok || !seen.first(req.Header.Get("X-Gitea-Delivery")) {
				break
			}
			if pull := pr.Pull(); IsPinbotPull(pull) {
				r.report.remember(pull)
			}
			resp.Triggered = r.triggerPush(req.Context(), o.trigger, p)
		case EventPackage:
			pe, err := ParsePackage(body)
			if err != nil {
				r.metrics.countWebhook(webhookBadRequest)
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			image, tag, ok := pe.Image()
			if !ok || o.promoter == nil || !seen.first(req.Header.Get("X-Gitea-Delivery")) {
				break
			}
			resp.Promoting = r.promotePackage(req.Context(), o.promoter, image, tag)
		}
		if len(resp.Triggered) == 0 && len(resp.Promoting) == 0 {
			r.metrics.countWebhook(webhookIgnored)
			writeWebhookResponse(w, http.StatusOK, resp)
			return
		}
		r.metrics.countWebhook(webhookTriggered)
		writeWebhookResponse(w, http.StatusAccepted, resp)
	})
}

// triggerPush triggers the apps following p's branch and returns their
// names.
func (r *Reconciler) triggerPush(ctx context.Context, trigger func(context.Context, string) error, p PushEvent) []string {
	var triggered []string
	// A verify-only app has no repo of its own: it follows the one its
	// Argo CD Application or Flux Kustomization named at its last pass.
	names := append(MatchApps(r.cfg.Apps, p), MatchApps(r.trackedApps(), p)...)
	for _, name := range names {
		if err := trigger(ctx, name); err != nil {
			logctx.From(ctx).Warn("webhook: triggering failed", "app", name, "error", err)
			continue
		}
		triggered = append(triggered, name)
	}
	logctx.From(ctx).Debug("webhook push", "repo", p.Repository.FullName, "ref", p.Ref,
		"after", shortSHA(p.After), "triggered", triggered)
	return triggered
}

// promotePackage starts, in the background, a promotion of image:tag into
// each promote entry that lists image, and returns those repositories. The
// promotion outlives the request (Gitea waits a few seconds at most) but
// not promoteTimeout; its outcome is logged.
func (r *Reconciler) promotePackage(ctx context.Context, p ImagePromoter, image, tag string) []string {
	var repos []string
	log := logctx.From(ctx)
	for _, t := range PromoteTargets(r.cfg.Promote, image) {
		repos = append(repos, t.Repo)
		go func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), promoteTimeout)
			defer cancel()
			res, err := p.PromoteImage(ctx, t, image, tag)
			if err != nil {
				log.Error("promoting a pushed image", "image", image, "tag", tag, "repo", t.Repo, "error", err)
				return
			}
			log.Info("promoted a pushed image", "image", image, "tag", tag, "repo", t.Repo, "result", res)
		}()
	}
	return repos
}

func writeWebhookResponse(w http.ResponseWriter, code int, resp webhookResponse) {
	if resp.Triggered == nil {
		resp.Triggered = []string{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(resp)
}
