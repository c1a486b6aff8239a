package signin

import (
	"context"
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
)

// Guard lets a request through to the dashboard when it shows who it is
// from: a session of SignIn's, the auth proxy's Header, or the read
// Token. With none of the three configured, everyone reads.
type Guard struct {
	Token  []byte
	Header string
	SignIn *SignIn
}

type identityKey struct{}

// From is who the guarded request ctx belongs to is from: a person, when
// signed in or named by the auth proxy.
func From(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// Wrap guards h. A browser without a session is sent to sign in; a
// caller of the JSON API gets 401.
func (g Guard) Wrap(h http.Handler) http.Handler {
	if len(g.Token) == 0 && g.Header == "" && g.SignIn == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if g.SignIn != nil {
			if id, ok := g.SignIn.Session(req); ok {
				h.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), identityKey{}, id)))
				return
			}
		}
		if g.Header != "" {
			if user := req.Header.Get(g.Header); user != "" {
				h.ServeHTTP(w, req.WithContext(context.WithValue(req.Context(), identityKey{}, Identity{User: user})))
				return
			}
		}
		if tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer "); ok && len(g.Token) > 0 &&
			subtle.ConstantTimeCompare([]byte(tok), g.Token) == 1 {
			h.ServeHTTP(w, req)
			return
		}
		if g.SignIn != nil && req.Method == http.MethodGet && strings.Contains(req.Header.Get("Accept"), "text/html") {
			http.Redirect(w, req, LoginPath+"?next="+url.QueryEscape(req.URL.RequestURI()), http.StatusFound)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="pinbot"`)
		http.Error(w, "unauthorized: the dashboard needs a sign-in, a bearer token or the auth proxy's header", http.StatusUnauthorized)
	})
}
