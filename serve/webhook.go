package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/commitid"
	"pinbot.dev/pinbot/internal/logctx"
)

// Webhook request results, the result label of
// pinbot_webhook_requests_total.
const (
	webhookTriggered        = "triggered"
	webhookIgnored          = "ignored"
	webhookUnauthorized     = "unauthorized"
	webhookBadRequest       = "bad_request"
	webhookMethodNotAllowed = "method_not_allowed"
	webhookTooLarge         = "too_large"
)

// webhookResponse is the body the webhook answers with.
type webhookResponse struct {
	Triggered []string `json:"triggered"`
	// Promoting names the promote repositories a package event started a
	// promotion into.
	Promoting []string `json:"promoting,omitempty"`
}

// promoteTimeout bounds one webhook-started promotion.
const promoteTimeout = 5 * time.Minute

// webhook serves Gitea's webhooks. A POST whose X-Gitea-Signature is the
// hex HMAC-SHA256 of its body with secret is routed on its event type
// (see EventType):
//   - push triggers a full pass of each app following the pushed branch
//     (follow) whose inputs it changed (Reconciler.TriggerChanged: the
//     files its last render read);
//   - pull_request closed with merged true does the same for its base
//     branch, and tells the reconciler a pinbot pull request merged
//     (merged), for the proof comment on its merge commit;
//   - package, for a tagged container image a promote entry lists
//     (targets), starts a promotion of that tag into each such entry's
//     repository (promote), in the background.
//
// It answers 202 with {"triggered":[names],"promoting":[repos]} when it
// started something, 200 with empty lists when not (no app follows the
// branch, another event, an untagged digest, an X-Gitea-Delivery it has
// already seen, or a body it saw within ReplayWindow: deliveries are
// deduplicated over the last 1024 IDs and bodies). It answers
// 405 to other methods, 413 to a body over MaxWebhookBody, 401 to a missing
// or bad signature (with an empty secret every request is refused) and 400
// to a payload it cannot parse. The secret is never logged or echoed.
type webhook struct {
	secret []byte
	// follow names the apps following branch of the repository at any of
	// the URLs (reconciler.Following).
	follow func(branch string, repoURLs ...string) []string
	// trigger asks for a pass of each of apps, which follow branch of
	// the repository at urls (the replica passing an app runs it, the
	// others are forwarded), and returns those asked for.
	trigger func(ctx context.Context, branch string, urls, apps []string) ([]string, error)
	// merged is told of each merged pull request.
	merged func(*gitforge.Pull)
	// targets are the promote entries listing an image; promote, when
	// not nil, promotes a pushed tag into one.
	targets func(image string) []Target
	promote func(ctx context.Context, t Target, image, tag string) (string, error)

	requests *prometheus.CounterVec
	seen     *deliveries
}

// newPushCounter counts the apps of this replica that pushes passed, and
// those they left alone (the push changed none of their inputs).
func newPushCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_push_apps_total",
		Help: "Apps of this replica a push of their branch passed (result=passed) or left alone because it changed none of their rendered inputs (result=unchanged).",
	}, []string{"result"})
}

func newWebhookCounter() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pinbot_webhook_requests_total",
		Help: "Webhook requests by result.",
	}, []string{"result"})
}

// ServeHTTP implements http.Handler.
func (h *webhook) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		h.count(webhookMethodNotAllowed)
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "only POST is allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxWebhookBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.count(webhookTooLarge)
			http.Error(w, fmt.Sprintf("body over %d bytes", MaxWebhookBody), http.StatusRequestEntityTooLarge)
			return
		}
		h.count(webhookBadRequest)
		http.Error(w, "reading the body failed", http.StatusBadRequest)
		return
	}
	if !ValidSignature(h.secret, body, req.Header.Get("X-Gitea-Signature")) {
		h.count(webhookUnauthorized)
		http.Error(w, "missing or bad X-Gitea-Signature", http.StatusUnauthorized)
		return
	}
	resp, err := h.route(req, body)
	switch {
	case err != nil:
		h.count(webhookBadRequest)
		http.Error(w, err.Error(), http.StatusBadRequest)
	case len(resp.Triggered) == 0 && len(resp.Promoting) == 0:
		h.count(webhookIgnored)
		writeWebhookResponse(w, http.StatusOK, resp)
	default:
		h.count(webhookTriggered)
		writeWebhookResponse(w, http.StatusAccepted, resp)
	}
}

// route acts on one signed delivery; the error is a payload it cannot
// parse.
func (h *webhook) route(req *http.Request, body []byte) (webhookResponse, error) {
	var resp webhookResponse
	delivery := req.Header.Get("X-Gitea-Delivery")
	switch EventType(req.Header.Get("X-Gitea-Event-Type"), req.Header.Get("X-Gitea-Event"), body) {
	case EventPush:
		p, err := ParsePush(body)
		if err != nil {
			return resp, err
		}
		if h.seen.first(delivery, body) {
			resp.Triggered = h.triggerPush(req.Context(), p)
		}
	case EventPullRequest:
		pr, err := ParsePullRequest(body)
		if err != nil {
			return resp, err
		}
		p, ok := pr.MergedPush()
		if !ok || !h.seen.first(delivery, body) {
			break
		}
		if h.merged != nil {
			h.merged(pr.Pull())
		}
		resp.Triggered = h.triggerPush(req.Context(), p)
	case EventPackage:
		pe, err := ParsePackage(body)
		if err != nil {
			return resp, err
		}
		image, tag, ok := pe.Image()
		if ok && h.promote != nil && h.seen.first(delivery, body) {
			resp.Promoting = h.promotePackage(req.Context(), image, tag)
		}
	}
	return resp, nil
}

func (h *webhook) count(result string) {
	if h.requests != nil {
		h.requests.WithLabelValues(result).Inc()
	}
}

// triggerPush triggers the apps following p's branch and returns their
// names.
func (h *webhook) triggerPush(ctx context.Context, p PushEvent) []string {
	log := logctx.From(ctx)
	urls := []string{p.Repository.CloneURL, p.Repository.HTMLURL}
	var triggered []string
	if apps := h.follow(p.Branch(), urls...); len(apps) > 0 {
		var err error
		if triggered, err = h.trigger(ctx, p.Branch(), urls, apps); err != nil {
			log.Warn("webhook: forwarding the push to the other replicas failed", "apps", len(apps)-len(triggered), "error", err)
		}
	}
	log.Debug("webhook push", "repo", p.Repository.FullName, "ref", p.Ref, "after", commitid.Short(p.After), "triggered", triggered)
	return triggered
}

// promotePackage starts, in the background, a promotion of image:tag into
// each promote entry that lists image, and returns those repositories. The
// promotion outlives the request (Gitea waits a few seconds at most) but
// not promoteTimeout; its outcome is logged.
func (h *webhook) promotePackage(ctx context.Context, image, tag string) []string {
	var repos []string
	log := logctx.From(ctx)
	for _, t := range h.targets(image) {
		repos = append(repos, t.Repo)
		go func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), promoteTimeout)
			defer cancel()
			res, err := h.promote(ctx, t, image, tag)
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
