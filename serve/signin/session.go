// Package signin says who a request to serve's dashboard is from, and
// signs people in with OpenID Connect: the authorization code flow with
// PKCE, then a session cookie every replica reads (signed with a key they
// share, HttpOnly, SameSite=Strict, expiring). The older modes stay: the
// read token (a machine, no person) and an auth proxy's header (the
// person the proxy names).
package signin

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Identity is who a request is from.
type Identity struct {
	// User is the name the cluster's RBAC knows them by: the ID token's
	// username claim, or the auth proxy's header.
	User string `json:"u"`
	// Groups are the ID token's groups claim.
	Groups []string `json:"g,omitempty"`
	// Session is the session's random ID, which its CSRF token is bound
	// to; empty for the token and proxy modes.
	Session string `json:"s,omitempty"`
	// Expires ends the session.
	Expires int64 `json:"e,omitempty"`
}

// SessionCookie is the session's cookie.
const SessionCookie = "pinbot_session"

// maxCookie bounds a session cookie: browsers keep 4 KiB per cookie.
const maxCookie = 3800

// ErrTooBig is a session that cannot fit in a cookie: too many groups.
var ErrTooBig = errors.New("the identity provider names too many groups for a session cookie: narrow the groups claim (for example with a scope that asks only pinbot's groups)")

// sealer signs and reads back values with a key every replica shares.
type sealer struct{ key []byte }

// seal is value as JSON, then its HMAC-SHA256, both base64url.
func (s sealer) seal(purpose string, value any) (string, error) {
	b, err := json.Marshal(value)
	if err != nil {
		return "", err
	}
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + s.mac(purpose, payload), nil
}

// open reads back a sealed value into value; a forged or altered one is
// an error.
func (s sealer) open(purpose, sealed string, value any) error {
	payload, mac, ok := strings.Cut(sealed, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(s.mac(purpose, payload))) {
		return errors.New("not signed with the session key")
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, value)
}

// mac binds a value to its purpose, so a login cookie is never taken as
// a session.
func (s sealer) mac(purpose, payload string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(purpose + "\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// session reads req's session cookie: the Identity, when it is signed
// with the key and not expired.
func (s sealer) session(req *http.Request, now time.Time) (Identity, bool) {
	c, err := req.Cookie(SessionCookie)
	if err != nil {
		return Identity{}, false
	}
	var id Identity
	if s.open("session", c.Value, &id) != nil || id.User == "" || id.Session == "" || now.Unix() >= id.Expires {
		return Identity{}, false
	}
	return id, true
}

// csrf is the token a form of id's session carries: bound to the
// session, so a token from another session, or from before a sign-out,
// is refused.
func (s sealer) csrf(id Identity) string {
	return s.mac("csrf", id.Session)
}

// randomID is 128 random bits, base64url.
func randomID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("reading random bytes: %s", err))
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
