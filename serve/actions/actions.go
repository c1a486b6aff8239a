// Package actions is what a signed-in person may do from the release
// page: pause or resume the onward promotions into an environment, merge
// pinbot's onward pull request whose gate passed, roll it back, hold a
// digest there, release a held digest, and force one in. Each is a ledger entry
// naming who and why, never a change to the cluster; each is allowed by the cluster's RBAC
// (a SubjectAccessReview for the person's user and groups on the
// pinbot.dev resource environments, named OWNER/REPO/ENV, with the
// action's verb); each asks for a confirmation that says what will
// happen, and a reason.
package actions

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/store"
	"pinbot.dev/pinbot/serve/signin"
)

// The RBAC a person needs: verb on Resource of Group, named
// OWNER/REPO/ENV.
const (
	Group    = "pinbot.dev"
	Resource = "environments"
)

// The verbs.
const (
	Pause    = "pause"
	Resume   = "resume"
	Promote  = "promote"
	Rollback = "rollback"
	Hold     = "hold"
	Release  = "release"
	Force    = "force"
)

// Verbs are every action, in the order a page offers them.
var Verbs = []string{Pause, Resume, Promote, Rollback, Hold, Release, Force}

// Authorizer asks the cluster whether id may verb the environment env of
// repo.
type Authorizer struct{ Client kubernetes.Interface }

// Allowed is the SubjectAccessReview's answer; an error when the API
// server gives none (which refuses).
func (a Authorizer) Allowed(ctx context.Context, id signin.Identity, verb, repo, env string) (bool, error) {
	r, err := a.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: id.User, Groups: id.Groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: Group, Resource: Resource, Name: repo + "/" + env, Verb: verb},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("asking the API server whether %s may %s %s/%s: %w", id.User, verb, repo, env, err)
	}
	return r.Status.Allowed, nil
}

// Handler serves the actions under /actions/: GET shows the
// confirmation, POST does it.
type Handler struct {
	Ledgers *store.Ledgers
	Authz   Authorizer
	SignIn  *signin.SignIn
	// Done is told of the repository of each action done: its chain
	// announces it (the Event, the notification) at once.
	Done func(repo string)
	// Force opens the forced promotion of digest of image into env of
	// repo, with reason (serve's promoter, as pinbot promote --force
	// does), and says which pull request it opened; nil refuses the verb.
	Force func(ctx context.Context, repo, env, image, digest, reason string) (string, error)
	// Merge merges pull request number of repo at head, the commit
	// pinbot judged, with message (serve's forge, as autoMerge does);
	// nil refuses the verb.
	Merge func(ctx context.Context, repo string, number int64, head, message string) error
	Now   func() time.Time

	mu      sync.Mutex
	offered map[string]offer // Allowed's answers, by person and environment
}

// Routes serves the actions on mux, behind guard.
func (h *Handler) Routes(mux *http.ServeMux, guard signin.Guard) {
	mux.Handle("GET /actions/{verb}", guard.Wrap(http.HandlerFunc(h.confirm)))
	mux.Handle("POST /actions/{verb}", guard.Wrap(http.HandlerFunc(h.do)))
}

// request is one action as a form names it.
type request struct {
	Verb, Repo, Env, Image, Digest, Reason string
}

func readRequest(req *http.Request) (request, error) {
	r := request{Verb: req.PathValue("verb"), Repo: req.FormValue("repo"), Env: req.FormValue("env"),
		Image: req.FormValue("image"), Digest: req.FormValue("digest"), Reason: strings.TrimSpace(req.FormValue("reason"))}
	switch {
	case !slices.Contains(Verbs, r.Verb):
		return r, fmt.Errorf("no action %q: want one of %s", r.Verb, strings.Join(Verbs, ", "))
	case r.Repo == "" || r.Env == "":
		return r, errors.New("the form names no repository or environment")
	case (r.Verb == Release || r.Verb == Hold || r.Verb == Force) && (r.Image == "" || !imageref.ValidDigest(r.Digest)):
		return r, fmt.Errorf("%s names an image and its whole digest", r.Verb)
	case (r.Verb == Rollback || r.Verb == Promote) && r.Image == "":
		return r, fmt.Errorf("%s names its image", r.Verb)
	}
	return r, nil
}

// what says what r will do, for the confirmation and the record.
func (r request) what() string {
	switch r.Verb {
	case Pause:
		return fmt.Sprintf("Pause the onward promotions into %s of %s: none opens and none merges until resumed. Rollbacks go on.", r.Env, r.Repo)
	case Resume:
		return fmt.Sprintf("Resume the onward promotions into %s of %s.", r.Env, r.Repo)
	case Promote:
		return fmt.Sprintf("Merge pinbot's onward pull request of %s into %s of %s now, at the head pinbot judged, while its pinbot/gate is green: the promotion is as gated as ever, only its merge is yours. Gitea's own rules (approvals, required checks) still apply.", r.Image, r.Env, r.Repo)
	case Rollback:
		return fmt.Sprintf("Roll %s in %s of %s back to the digest proven there before the one Git pins: pinbot holds the pinned digest in %s and after it, and opens its rollback pull request (merged as the environment's rollback setting says), which is proven like any release.", r.Image, r.Env, r.Repo, r.Env)
	case Force:
		return fmt.Sprintf("Force %s@%s into %s of %s past the gate's proof check (never past a hold): pinbot opens a pull request on its own forced branch, with your name and reason in it. Its pinbot/gate still says the digest is not proven upstream: merging it is a person's decision, and a gate bypass.", r.Image, imageref.Short(r.Digest), r.Env, r.Repo)
	case Hold:
		return fmt.Sprintf("Hold %s@%s in %s of %s and every environment after it: none takes it until a person releases the hold. What runs now stays.", r.Image, imageref.Short(r.Digest), r.Env, r.Repo)
	}
	return fmt.Sprintf("Release the hold on %s@%s in %s of %s: it may be promoted into %s again once proven upstream.", r.Image, imageref.Short(r.Digest), r.Env, r.Repo, r.Env)
}

// person is who the guarded request is from, and whether the cluster
// allows them r; the error says why not.
func (h *Handler) person(req *http.Request, r request) (signin.Identity, int, error) {
	id, ok := signin.From(req.Context())
	if !ok || id.Session == "" {
		return id, http.StatusForbidden, errors.New("actions need a person signed in with the dashboard's OpenID Connect sign-in")
	}
	allowed, err := h.Authz.Allowed(req.Context(), id, r.Verb, r.Repo, r.Env)
	switch {
	case err != nil:
		return id, http.StatusServiceUnavailable, err
	case !allowed:
		return id, http.StatusForbidden, fmt.Errorf("%s may not %s %s/%s: the cluster's RBAC grants no verb %s on %s.%s named %s/%s", id.User, r.Verb, r.Repo, r.Env, r.Verb, Resource, Group, r.Repo, r.Env)
	}
	return id, 0, nil
}

// Allowed is the verbs req's signed-in person may use on env of repo,
// for the page's buttons; none when not signed in. The action itself
// asks again.
func (h *Handler) Allowed(req *http.Request, repo, env string) []string {
	id, ok := signin.From(req.Context())
	if !ok || id.Session == "" {
		return nil
	}
	key := strings.Join(append([]string{id.User, repo, env}, id.Groups...), "\x00")
	h.mu.Lock()
	c, ok := h.offered[key]
	h.mu.Unlock()
	if ok && h.Now().Before(c.until) {
		return c.verbs
	}
	var out []string
	for _, v := range Verbs {
		if ok, err := h.Authz.Allowed(req.Context(), id, v, repo, env); err == nil && ok {
			out = append(out, v)
		}
	}
	h.mu.Lock()
	if h.offered == nil || len(h.offered) > 10000 {
		h.offered = map[string]offer{}
	}
	h.offered[key] = offer{verbs: out, until: h.Now().Add(offerFor)}
	h.mu.Unlock()
	return out
}

// offerFor is how long a page's buttons trust the cluster's answer: a
// page refreshes every few seconds, and each answer is a
// SubjectAccessReview per verb. The action itself always asks again.
const offerFor = 30 * time.Second

// offer is what Allowed answered, until when.
type offer struct {
	verbs []string
	until time.Time
}

// Person is who req is from when signed in, and their form token.
func (h *Handler) Person(req *http.Request) (user, csrf string) {
	id, ok := signin.From(req.Context())
	if !ok || id.Session == "" {
		return "", ""
	}
	return id.User, h.SignIn.CSRF(id)
}

func (h *Handler) confirm(w http.ResponseWriter, req *http.Request) {
	r, err := readRequest(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id, code, err := h.person(req, r)
	if err != nil {
		http.Error(w, err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'")
	_ = confirmPage.Execute(w, map[string]any{"R": r, "What": r.what(), "User": id.User, "CSRF": h.SignIn.CSRF(id)})
}

var confirmPage = template.Must(template.New("").Parse(`<!doctype html><html lang="en"><meta charset="utf-8"><title>Confirm: {{.R.Verb}}</title>
<link rel="stylesheet" href="/assets/pinbot.css">
<main class="confirm"><h1>Confirm</h1><p class="what">{{.What}}</p><p class="muted">Recorded in the ledger as done by {{.User}}, with your reason.</p>
<form method="post" action="/actions/{{.R.Verb}}">
<input type="hidden" name="csrf" value="{{.CSRF}}"><input type="hidden" name="repo" value="{{.R.Repo}}"><input type="hidden" name="env" value="{{.R.Env}}">
<input type="hidden" name="image" value="{{.R.Image}}"><input type="hidden" name="digest" value="{{.R.Digest}}">
<label>Reason <input name="reason" required></label> <button type="submit">{{.R.Verb}}</button></form></main></html>`))

func (h *Handler) do(w http.ResponseWriter, req *http.Request) {
	log := logctx.From(req.Context())
	r, err := readRequest(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id, code, err := h.person(req, r)
	if err == nil {
		if err = h.SignIn.CheckForm(req, id); err != nil {
			code = http.StatusForbidden
		}
	}
	if err == nil && r.Reason == "" {
		code, err = http.StatusBadRequest, errors.New("a reason is required: the ledger records who did it, and why")
	}
	if err == nil {
		code, err = h.apply(req.Context(), id, r)
	}
	if err != nil {
		log.Warn("action refused", "user", id.User, "groups", id.Groups, "verb", r.Verb, "repo", r.Repo, "env", r.Env, "from", req.RemoteAddr, "error", err)
		http.Error(w, err.Error(), code)
		return
	}
	log.Info("action", "user", id.User, "verb", r.Verb, "repo", r.Repo, "env", r.Env, "image", r.Image, "digest", r.Digest, "reason", r.Reason, "from", req.RemoteAddr)
	http.Redirect(w, req, "/releases/"+r.Repo+"#stage-"+url.PathEscape(r.Env), http.StatusSeeOther)
}

// apply records r in the repository's ledger as done by id.
func (h *Handler) apply(ctx context.Context, id signin.Identity, r request) (int, error) {
	now := h.Now()
	done := false
	var err error
	switch r.Verb {
	case Promote:
		if err = h.merge(ctx, id, r, now); err != nil {
			return http.StatusConflict, err
		}
		done = true
	case Force:
		if h.Force == nil {
			return http.StatusNotImplemented, errors.New("this pinbot promotes nothing itself (no forge, or no promote entry for the repository)")
		}
		pull, err := h.Force(ctx, r.Repo, r.Env, r.Image, r.Digest, id.User+": "+r.Reason)
		if err != nil {
			return http.StatusConflict, err
		}
		err = h.Ledgers.Update(ctx, r.Repo, func(l *release.Ledger) error {
			l.LogBy(now, r.Env, r.Image, release.ReasonPromotionOpened, fmt.Sprintf("%s forced %s into %s past the gate: %s (%s)", id.User, imageref.Short(r.Digest), r.Env, r.Reason, pull), id.User, r.Reason)
			return nil
		})
		if err != nil {
			return http.StatusInternalServerError, fmt.Errorf("opened %s, but the ledger did not take its record: %w", pull, err)
		}
		done = true
	case Rollback:
		if err = h.Ledgers.AskRollback(ctx, r.Repo, r.Env, r.Image, id.User, r.Reason, now); err != nil {
			return http.StatusConflict, err
		}
		done = true
	case Hold:
		done, err = h.Ledgers.Hold(ctx, r.Repo, r.Env, r.Image, r.Digest, id.User, r.Reason, now)
	default:
		err = h.Ledgers.Update(ctx, r.Repo, func(l *release.Ledger) error {
			if !slices.ContainsFunc(l.Chain, func(e release.Environment) bool { return e.Name == r.Env }) {
				return fmt.Errorf("%s has no environment %s in its chain", r.Repo, r.Env)
			}
			switch r.Verb {
			case Pause:
				done = l.PauseBy(r.Env, id.User, r.Reason, now)
			case Resume:
				done = l.ResumeBy(r.Env, id.User, r.Reason, now)
			case Release:
				done = l.ReleaseBy(r.Env, r.Image, r.Digest, id.User, r.Reason, now)
			}
			return nil
		})
	}
	if err != nil {
		return http.StatusConflict, err
	}
	if !done {
		return http.StatusConflict, fmt.Errorf("nothing to %s: %s changed since the page was rendered: %s (reload it)", r.Verb, r.Env, h.standing(ctx, r))
	}
	if h.Done != nil {
		h.Done(r.Repo)
	}
	return 0, nil
}

// standing says what the ledger holds now of what r would change.
func (h *Handler) standing(ctx context.Context, r request) string {
	l, _, err := h.Ledgers.Get(ctx, r.Repo)
	if err != nil {
		return "the ledger cannot be read: " + err.Error()
	}
	p, paused := l.Paused[r.Env]
	held := release.StandingOf(l, nil, r.Env, r.Image, time.Time{}).HoldOn(r.Digest)
	switch {
	case (r.Verb == Pause || r.Verb == Resume) && paused:
		return fmt.Sprintf("%s paused it at %s: %s", p.By, p.At.UTC().Format(time.RFC3339), p.Why)
	case r.Verb == Pause || r.Verb == Resume:
		return "it is not paused"
	case held != nil:
		return fmt.Sprintf("%s@%s is held there since %s: %s", r.Image, imageref.Short(r.Digest), held.Since.UTC().Format(time.RFC3339), held.Reason)
	}
	return fmt.Sprintf("%s@%s is not held there", r.Image, imageref.Short(r.Digest))
}

// merge merges pinbot's onward pull request of r's image into r's
// environment at the head pinbot judged, once its gate is green, and
// records who merged it and why.
func (h *Handler) merge(ctx context.Context, id signin.Identity, r request, now time.Time) error {
	if h.Merge == nil {
		return errors.New("this pinbot merges nothing itself (no forge)")
	}
	l, _, err := h.Ledgers.Get(ctx, r.Repo)
	if err != nil {
		return err
	}
	var p *release.Proposal
	if t := l.Lookup(r.Env, r.Image); t != nil {
		p = t.Proposal
	}
	switch {
	case p == nil || p.Head == "":
		return fmt.Errorf("nothing to merge: pinbot has no onward pull request of %s open into %s (reload the page)", r.Image, r.Env)
	case p.Gate == nil || p.Gate.State != commitstatus.Success:
		state := "not posted yet"
		if p.Gate != nil {
			state = string(p.Gate.State) + ": " + p.Gate.Description
		}
		return fmt.Errorf("#%d waits at the gate (pinbot/gate %s): it merges once the gate is green", p.PR, state)
	}
	if err := h.Merge(ctx, r.Repo, p.PR, p.Head, fmt.Sprintf("Merged by pinbot for %s: %s", id.User, r.Reason)); err != nil {
		return fmt.Errorf("merging #%d: %w", p.PR, err)
	}
	err = h.Ledgers.Update(ctx, r.Repo, func(l *release.Ledger) error {
		l.LogBy(now, r.Env, r.Image, release.ReasonMerged, fmt.Sprintf("%s merged #%d (%s) into %s at the head pinbot judged: %s", id.User, p.PR, imageref.Short(p.Digest), r.Env, r.Reason), id.User, r.Reason)
		return nil
	})
	if err != nil {
		return fmt.Errorf("merged #%d, but the ledger did not take its record: %w", p.PR, err)
	}
	return nil
}
