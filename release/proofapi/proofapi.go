// Package proofapi is the proof as a gate for other tools: pinbot serve
// answers, over HTTP with a bearer token, whether a digest is proven in
// an environment (or an app), since when, on which Pods, and whether it is
// held; `pinbot promote --gate-url` asks it before promoting into an
// environment that takes only what is proven upstream, and so can Kargo's
// http promotion step or a GitOps Promoter web-request gate.
//
//	GET /api/v1/gate?env=staging&image=registry.example/org/web&digest=sha256:...
//	Authorization: Bearer <token>
//
//	{"env":"staging","image":"registry.example/org/web","digest":"sha256:...",
//	 "verified":true,"since":"2026-12-02T12:00:00Z","pinned":"sha256:...",
//	 "pods":[{"app":"web-staging","namespace":"staging","pod":"web-1",...}]}
package proofapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/jsonkeys"
	"pinbot.dev/pinbot/internal/loopback"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/trust/proven"
)

// Path is the endpoint's path on serve.
const Path = "/api/v1/gate"

// Query is one question: a digest of an image in an environment (Env,
// within Repo when several repositories declare one of that name), or in
// an app (App; Image optional).
type Query struct {
	Repo   string `json:"repo,omitempty"`
	Env    string `json:"env,omitempty"`
	App    string `json:"app,omitempty"`
	Image  string `json:"image,omitempty"`
	Digest string `json:"digest"`
}

// Answer is the gate's answer.
type Answer struct {
	Query
	// Verified: every replica runs Digest, Verified, now.
	Verified bool `json:"verified"`
	// Since is when the proof first held without a break.
	Since *time.Time `json:"since,omitempty"`
	// Pinned is what Git pins there now, Proven what is proven.
	Pinned string `json:"pinned,omitempty"`
	Proven string `json:"proven,omitempty"`
	// Why says why Digest is not verified.
	Why string `json:"why,omitempty"`
	// Hold is the hold on Digest there, if any.
	Hold *release.Hold `json:"hold,omitempty"`
	// FrozenUntil is set while a freeze window holds the environment.
	FrozenUntil *time.Time    `json:"frozenUntil,omitempty"`
	Pods        []release.Pod `json:"pods,omitempty"`
	// Stopped says why the repository's whole chain is stopped (holds on
	// an environment renamed away); nothing is admitted meanwhile.
	Stopped string `json:"stopped,omitempty"`
	// Attestation is what Digest's signed attestations say of the
	// environment, when an environment of the chain requires one of it
	// (requireAttestation). For an environment of another installation,
	// it is the whole answer.
	Attestation *proven.Attested `json:"attestation,omitempty"`
	// Group is the group Image moves onward with (an environment that
	// comes from this one declares together:) and each member's digest
	// proven here, when every member is: the set a Kargo stage should
	// take as one.
	Group *proven.Group `json:"group,omitempty"`
}

// Source answers queries (serve, from its ledgers and its reconciler).
type Source func(ctx context.Context, q Query) (Answer, error)

// ErrUnknown means the query names no environment or app serve knows.
var ErrUnknown = errors.New("no such environment or app")

// Handler serves the endpoint: GET with the query in the URL, the bearer
// token in Authorization. A missing or wrong token is 401, a bad query
// 400, an unknown environment or app 404.
func Handler(src Source, token []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		got, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		if !ok || len(token) == 0 || subtle.ConstantTimeCompare([]byte(got), token) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="pinbot"`)
			msg := "a bearer token is required"
			if ok {
				msg = "the bearer token is not the gate's (secrets.gateToken)"
			}
			writeError(w, http.StatusUnauthorized, msg)
			return
		}
		v := req.URL.Query()
		q := Query{Repo: v.Get("repo"), Env: v.Get("env"), App: v.Get("app"), Image: v.Get("image"), Digest: v.Get("digest")}
		switch {
		case (q.Env == "") == (q.App == ""):
			writeError(w, http.StatusBadRequest, "give env (with image) or app")
			return
		case q.Env != "" && q.Image == "":
			writeError(w, http.StatusBadRequest, "env needs image")
			return
		case !imageref.ValidDigest(q.Digest):
			writeError(w, http.StatusBadRequest, "digest: want sha256:<64 hex digits>")
			return
		}
		if q.Image != "" {
			// The image may come with its tag (or the digest asked):
			// the ledger keys images by repository.
			ref, err := imageref.Parse(q.Image)
			if err != nil {
				writeError(w, http.StatusBadRequest, "image: "+err.Error())
				return
			}
			q.Image = ref.Repository
		}
		a, err := src(req.Context(), q)
		switch {
		case errors.Is(err, ErrUnknown):
			writeError(w, http.StatusNotFound, err.Error())
			return
		case err != nil:
			writeError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		_ = json.NewEncoder(w).Encode(a)
	})
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// Client asks a gate.
type Client struct {
	URL   string // serve's base URL, or the endpoint's
	Token string
	HTTP  *http.Client // default loopback.Client(30 s): the token never follows a redirect to another origin
}

// Ask asks the gate q.
func (c Client) Ask(ctx context.Context, q Query) (Answer, error) {
	base := strings.TrimSuffix(c.URL, "/")
	if !strings.HasSuffix(base, Path) {
		base += Path
	}
	v := url.Values{}
	for k, x := range map[string]string{"repo": q.Repo, "env": q.Env, "app": q.App, "image": q.Image, "digest": q.Digest} {
		if x != "" {
			v.Set(k, x)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"?"+v.Encode(), nil)
	if err != nil {
		return Answer{}, fmt.Errorf("asking the gate: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	hc := c.HTTP
	if hc == nil {
		hc = loopback.Client(30 * time.Second)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Answer{}, fmt.Errorf("asking the gate at %s: %w", c.URL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		_ = json.Unmarshal(body, &e)
		return Answer{}, fmt.Errorf("asking the gate at %s: HTTP %d: %s", c.URL, resp.StatusCode, e.Error)
	}
	var a Answer
	if err := jsonkeys.Unmarshal(body, &a); err != nil {
		return Answer{}, fmt.Errorf("reading the gate's answer: %w", err)
	}
	return a, nil
}

// Asker answers gate queries: a Client of serve's endpoint, or a
// ledger read directly.
type Asker interface {
	Ask(ctx context.Context, q Query) (Answer, error)
}

// Admit is the promotion gate of `pinbot promote` and drift: it asks
// for the facts of an admission and lets release.Admit decide.
type Admit struct {
	Asker Asker
	Repo  string
	// Now is the clock the upstream's soak is measured to; default
	// time.Now.
	Now func() time.Time
}

// Admit returns nil or the *release.Refusal of a.
func (g Admit) Admit(ctx context.Context, a release.Admission) error {
	here, err := g.Asker.Ask(ctx, Query{Repo: g.Repo, Env: a.Env, Image: a.Image, Digest: a.Digest})
	if err != nil {
		return err
	}
	f := release.Facts{Hold: here.Hold, FrozenUntil: here.FrozenUntil, Stopped: here.Stopped, Now: time.Now()}
	if g.Now != nil {
		f.Now = g.Now()
	}
	// An upstream of another installation has no ledger here: its
	// attestation (a.Attested) is its proof.
	if a.Upstream != "" && !a.Force && !a.External {
		up, err := g.Asker.Ask(ctx, Query{Repo: g.Repo, Env: a.Upstream, Image: a.Image, Digest: a.Digest})
		if err != nil {
			return err
		}
		f.Proven, f.Pinned, f.ProvenDigest, f.Why = up.Verified, up.Pinned, up.Proven, up.Why
		if up.Since != nil {
			f.Since = *up.Since
		}
	}
	return release.Admit(a, f)
}

// FromLedger answers q, of an environment, from its repository's ledger
// l: serve's gate endpoint, and a CLI that reads the ledger itself.
func FromLedger(l *release.Ledger, q Query, now time.Time) Answer {
	a := Answer{Query: q, Hold: l.Held(q.Env, q.Image, q.Digest), Stopped: l.Stopped}
	t := l.Lookup(q.Env, q.Image)
	if t == nil {
		a.Why = fmt.Sprintf("%s pins no %s", q.Env, q.Image)
		return a
	}
	a.Pinned, a.Proven = t.Pinned, t.Proven
	a.Group = release.GroupProven(l, l.Chain, q.Env, q.Image)
	if t.FrozenUntil != nil && t.FrozenUntil.After(now) {
		a.FrozenUntil = t.FrozenUntil
	}
	switch {
	case t.Proven == q.Digest:
		a.Verified, a.Since, a.Pods = true, t.ProvenSince, t.Pods
	case t.Pinned != q.Digest:
		a.Why = fmt.Sprintf("%s pins %s", q.Env, imageref.Short(t.Pinned))
	default:
		a.Why = t.Why
		a.Pods = t.Pods
	}
	return a
}
