package actions_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"pinbot.dev/pinbot/internal/testenv/gitea"
	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/oidcop"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/release"
	"pinbot.dev/pinbot/release/store"
	"pinbot.dev/pinbot/serve/actions"
	"pinbot.dev/pinbot/serve/signin"
)

const (
	ns     = "pinbot-system"
	repo   = "acme/manifests"
	image  = "registry.example.com/acme/web"
	held   = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	sesKey = "a session key of at least thirty-two bytes, shared"
)

// rig is pinbot's sign-in and actions in front of a real API server's
// RBAC and a real OpenID Provider (zitadel/oidc's example OP) with two
// users: olga, whom a ClusterRole lets pause, resume and release in
// acme/manifests' prod, and vic, whom nothing does.
type rig struct {
	t       *testing.T
	url     string
	admin   kubernetes.Interface
	ledgers *store.Ledgers
	in      *signin.SignIn
	acts    *actions.Handler
	// forced are the forced promotions the handler asked serve's
	// promoter for ("repo env image@digest: reason").
	forced chan string
	// merged are the merges the handler asked serve's forge for
	// ("repo #N at head: message").
	merged chan string
}

func newRig(t *testing.T) *rig {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs bin/ peers (make tools)")
	}
	ctx := context.Background()
	bin, err := gitea.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	c, err := kube.Start(ctx, kube.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	admin := kubernetes.NewForConfigOrDie(c.Config())
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "pinbot-operator"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{actions.Group}, Resources: []string{actions.Resource}, ResourceNames: []string{repo + "/prod"},
		Verbs: []string{actions.Pause, actions.Resume, actions.Promote, actions.Rollback, actions.Hold, actions.Release, actions.Force}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "olga"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "olga"}}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ledgers := store.New(admin, ns)
	if err := ledgers.Update(ctx, repo, func(l *release.Ledger) error {
		l.Chain = release.Chain{{Name: "staging"}, {Name: "prod", From: "staging"}}
		l.Holds = append(l.Holds, release.Hold{Env: "prod", Image: image, Digest: held, Reason: "its proof broke in prod", Since: time.Now(), From: "prod"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	self := "http://" + ln.Addr().String()
	issuer := oidcop.Start(t, filepath.Join(bin, "oidc"), self+signin.CallbackPath)
	in, err := signin.New(signin.Config{Issuer: issuer, ClientID: "web", ClientSecret: "secret", RedirectURL: self + signin.CallbackPath,
		Scopes: []string{"profile", "email"}, SessionKey: []byte(sesKey)}, &http.Client{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	forced, merged := make(chan string, 4), make(chan string, 4)
	acts := &actions.Handler{Ledgers: ledgers, Authz: actions.Authorizer{Client: admin}, SignIn: in, Now: time.Now,
		Force: func(_ context.Context, repo, env, image, digest, reason string) (string, error) {
			forced <- fmt.Sprintf("%s %s %s@%s: %s", repo, env, image, digest, reason)
			return "#9", nil
		},
		Merge: func(_ context.Context, repo string, number int64, head, message string) error {
			if head == "moved" {
				return errors.New("its head moved since pinbot judged it")
			}
			merged <- fmt.Sprintf("%s #%d at %s: %s", repo, number, head, message)
			return nil
		}}
	mux := http.NewServeMux()
	// The pages' stylesheet, as the dashboard serves it.
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServer(http.Dir(filepath.Join("..", "..", "dashboard", "assets")))))
	in.Routes(mux)
	guard := signin.Guard{SignIn: in}
	acts.Routes(mux, guard)
	mux.Handle("/", guard.Wrap(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		id, _ := signin.From(req.Context())
		fmt.Fprintf(w, "page for %s, may %v", id.User, acts.Allowed(req, repo, "prod"))
	})))
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	srv.Start()
	t.Cleanup(srv.Close)
	return &rig{t: t, url: self, admin: admin, ledgers: ledgers, in: in, acts: acts, forced: forced, merged: merged}
}

// signIn signs user in through the provider's own login form.
func (r *rig) signIn(user, password string) *oidcop.Person {
	r.t.Helper()
	u, _ := url.Parse(r.in.Issuer())
	return oidcop.SignIn(r.t, r.url, signin.LoginPath, u.String(), user, password)
}

func (r *rig) ledger() *release.Ledger {
	l, _, err := r.ledgers.Get(context.Background(), repo)
	if err != nil {
		r.t.Fatal(err)
	}
	return l
}

func countReason(l *release.Ledger, reason string) int {
	n := 0
	for _, e := range l.Events {
		if e.Reason == reason {
			n++
		}
	}
	return n
}

// TestActionsFromThePage: olga and vic sign in through the provider's
// login form. olga's page offers every verb in prod, and nothing in
// staging; she pauses prod with a reason from the
// confirmation, and the ledger names her; the same form again is refused
// as out of date, with no second entry; a POST without the CSRF token,
// or from another origin, is refused; she releases the hold, and holds
// the next digest (once: a second time is out of date). vic's page
// offers nothing, and his forged POST, with his own session's token, is
// refused by RBAC and changes nothing.
func TestActionsFromThePage(t *testing.T) {
	r := newRig(t)
	olga := r.signIn("olga", "olga-pw")
	if page := olga.Get("/", http.StatusOK); !strings.Contains(page, "page for olga, may [pause resume promote rollback hold release force]") {
		t.Errorf("olga's page: %s", page)
	}

	prod := url.Values{"repo": {repo}, "env": {"prod"}}
	page, form := olga.ConfirmForm(prod, actions.Pause)
	if !strings.Contains(page, "Pause the onward promotions into prod of "+repo) || form.Get("csrf") == "" {
		t.Fatalf("the confirmation says what will happen and carries a token:\n%s", page)
	}
	noToken := url.Values{"repo": {repo}, "env": {"prod"}, "reason": {"no token"}}
	if code, body := olga.Post("/actions/pause", noToken, ""); code != http.StatusForbidden || !strings.Contains(body, "CSRF") {
		t.Errorf("a POST without the token: %d %s", code, body)
	}
	form.Set("reason", "incident 42: payments degraded")
	if code, body := olga.Post("/actions/pause", form, "http://evil.example"); code != http.StatusForbidden || !strings.Contains(body, "another origin") {
		t.Errorf("a POST from another origin: %d %s", code, body)
	}
	if code, body := olga.Post("/actions/pause", form, r.url); code != http.StatusSeeOther {
		t.Fatalf("olga's pause: %d %s", code, body)
	}
	l := r.ledger()
	if p, ok := l.Paused["prod"]; !ok || p.By != "olga" || p.Why != "incident 42: payments degraded" {
		t.Errorf("the ledger's pause: %+v, %t; want olga's, with her reason", p, ok)
	}
	if n := len(l.Audit); n != 1 || l.Audit[0].By != "olga" || l.Audit[0].Why != "incident 42: payments degraded" || l.Audit[0].Reason != release.ReasonChainPaused {
		t.Errorf("the audit: %+v; want olga's pause", l.Audit)
	}
	if code, body := olga.Post("/actions/pause", form, r.url); code != http.StatusConflict || !strings.Contains(body, "changed since the page was rendered: olga paused it at ") {
		t.Errorf("the same pause again (a double click): %d %s", code, body)
	}
	if n := countReason(r.ledger(), release.ReasonChainPaused); n != 1 {
		t.Errorf("%d ChainPaused entries; want 1", n)
	}
	olga.Get("/actions/pause?"+url.Values{"repo": {repo}, "env": {"staging"}}.Encode(), http.StatusForbidden)

	hold := url.Values{"repo": {repo}, "env": {"prod"}, "image": {image}, "digest": {held}}
	_, form = olga.ConfirmForm(hold, actions.Release)
	form.Set("reason", "the fix is in 1.4.1; 1.4.0 is safe behind the flag")
	if code, body := olga.Post("/actions/release", form, ""); code != http.StatusSeeOther {
		t.Fatalf("olga's release: %d %s", code, body)
	}
	if l := r.ledger(); l.Held("prod", image, held) != nil || countReason(l, release.ReasonHoldLifted) != 1 || !strings.Contains(l.Events[len(l.Events)-1].What, "olga released the hold") {
		t.Errorf("the hold after olga's release: %+v", l.Events)
	}

	const next = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	page, form = olga.ConfirmForm(url.Values{"repo": {repo}, "env": {"prod"}, "image": {image}, "digest": {next}}, actions.Hold)
	if !strings.Contains(page, "Hold "+image+"@sha256:222222222222 in prod of "+repo) {
		t.Errorf("the hold's confirmation:\n%s", page)
	}
	form.Set("reason", "1.5.0 leaks memory in staging")
	if code, body := olga.Post("/actions/hold", form, ""); code != http.StatusSeeOther {
		t.Fatalf("olga's hold: %d %s", code, body)
	}
	if h := r.ledger().Held("prod", image, next); h == nil || h.Reason != "held by olga: 1.5.0 leaks memory in staging" {
		t.Errorf("the hold olga placed: %+v", h)
	}
	if code, _ := olga.Post("/actions/hold", form, ""); code != http.StatusConflict {
		t.Errorf("holding it again: %d; want 409", code)
	}

	// Forcing a digest in asks serve's promoter for the forced pull
	// request, with her name in the reason, and the audit keeps it.
	_, form = olga.ConfirmForm(url.Values{"repo": {repo}, "env": {"prod"}, "image": {image}, "digest": {held}}, actions.Force)
	form.Set("reason", "hotfix for CVE-2026-0001")
	if code, body := olga.Post("/actions/force", form, ""); code != http.StatusSeeOther {
		t.Fatalf("olga's force: %d %s", code, body)
	}
	if got := <-r.forced; got != repo+" prod "+image+"@"+held+": olga: hotfix for CVE-2026-0001" {
		t.Errorf("the forced promotion asked for: %s", got)
	}
	if a := r.ledger().Audit; a[len(a)-1].Reason != release.ReasonPromotionOpened || a[len(a)-1].By != "olga" || !strings.Contains(a[len(a)-1].What, "olga forced sha256:111111111111 into prod past the gate: hotfix for CVE-2026-0001 (#9)") {
		t.Errorf("the audit of the force: %+v", a[len(a)-1])
	}

	vic := r.signIn("vic", "vic-pw")
	if page := vic.Get("/", http.StatusOK); !strings.Contains(page, "page for vic, may []") {
		t.Errorf("vic's page: %s", page)
	}
	if body := vic.Get("/actions/resume?"+prod.Encode(), http.StatusForbidden); !strings.Contains(body, "vic may not resume "+repo+"/prod") {
		t.Errorf("vic's confirmation: %s", body)
	}
	vicToken := url.Values{"repo": {repo}, "env": {"prod"}, "reason": {"mine now"}, "csrf": {r.in.CSRF(r.identity(vic))}}
	before := len(r.ledger().Events)
	if code, body := vic.Post("/actions/resume", vicToken, ""); code != http.StatusForbidden || !strings.Contains(body, "RBAC") {
		t.Errorf("vic's forged resume: %d %s", code, body)
	}
	if l := r.ledger(); len(l.Events) != before || l.Paused["prod"].By != "olga" {
		t.Errorf("vic's forged resume changed the ledger: %+v", l.Events[before:])
	}

	// olga loses her binding. Her page may still offer what the cluster
	// answered a moment ago (the buttons ask once per half minute), but
	// the action asks again, and is refused; the confirmation too.
	if err := r.admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), "olga", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The API server's RBAC takes the deletion in a moment later: once
	// it answers no, so does the action, which asked it again.
	poll.Until(t, 30*time.Second, "the API server refusing olga's resume", func() (bool, string) {
		ok, err := (actions.Authorizer{Client: r.admin}).Allowed(context.Background(), r.identity(olga), actions.Resume, repo, "prod")
		return err == nil && !ok, fmt.Sprint(ok, err)
	})
	form = url.Values{"repo": {repo}, "env": {"prod"}, "reason": {"the incident is over"}, "csrf": {r.in.CSRF(r.identity(olga))}}
	if code, body := olga.Post("/actions/resume", form, ""); code != http.StatusForbidden || !strings.Contains(body, "olga may not resume") {
		t.Errorf("olga's resume once her binding is gone: %d %s", code, body)
	}
	if _, ok := r.ledger().Paused["prod"]; !ok {
		t.Error("prod was resumed by someone whose binding is gone")
	}
}

// identity is the session b's cookie holds, read as a replica would.
func (r *rig) identity(b *oidcop.Person) signin.Identity {
	r.t.Helper()
	u, _ := url.Parse(r.url)
	req := httptest.NewRequest(http.MethodGet, r.url+"/", nil)
	for _, c := range b.C.Jar.Cookies(u) {
		req.AddCookie(c)
	}
	id, ok := r.in.Session(req)
	if !ok {
		r.t.Fatal("no session in the person")
	}
	return id
}

// TestSessionsAcrossReplicas: a session one replica signed works on
// another with the same key, and on none with another key; an altered
// cookie, or none, is sent to sign in; signing out needs the session's
// token and ends it; a callback whose state is not the login's is
// refused.
func TestSessionsAcrossReplicas(t *testing.T) {
	r := newRig(t)
	olga := r.signIn("olga", "olga-pw")
	u, _ := url.Parse(r.url)
	cookies := olga.C.Jar.Cookies(u)
	replica := func(key string) *signin.SignIn {
		in, err := signin.New(signin.Config{Issuer: r.in.Issuer(), ClientID: "web", RedirectURL: r.url + signin.CallbackPath, SessionKey: []byte(key)}, http.DefaultClient)
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	if id, ok := replica(sesKey).Session(req); !ok || id.User != "olga" {
		t.Errorf("another replica with the key: %+v, %t", id, ok)
	}
	if _, ok := replica(strings.Repeat("k", 40)).Session(req); ok {
		t.Error("a replica with another key took the session")
	}
	altered := httptest.NewRequest(http.MethodGet, "/", nil)
	for _, c := range cookies {
		if c.Name == signin.SessionCookie {
			payload, mac, _ := strings.Cut(c.Value, ".")
			c.Value = strings.Replace(payload, "o", "0", 1) + "." + mac
		}
		altered.AddCookie(c)
	}
	if _, ok := r.in.Session(altered); ok {
		t.Error("an altered session was taken")
	}
	anon := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ = http.NewRequest(http.MethodGet, r.url+"/releases", nil)
	req.Header.Set("Accept", "text/html")
	resp, err := anon.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, signin.LoginPath+"?next=") {
		t.Errorf("no session: %s to %q; want the sign-in", resp.Status, loc)
	}
	// Signing out needs the session's token, then ends the session: the
	// next page sends her to sign in again.
	if code, _ := olga.Post(signin.LogoutPath, url.Values{}, ""); code != http.StatusForbidden {
		t.Errorf("a sign-out without the token: %d, want 403", code)
	}
	if code, _ := olga.Post(signin.LogoutPath, url.Values{"csrf": {r.in.CSRF(r.identity(olga))}}, ""); code != http.StatusSeeOther {
		t.Errorf("olga's sign-out: %d, want 303", code)
	}
	if page := olga.Get("/", http.StatusOK); !strings.Contains(page, `name="password"`) {
		t.Errorf("after signing out, the page: %.300s; want the provider's login form", page)
	}
	if body := olga.Get(signin.CallbackPath+"?state=forged&code=x", http.StatusForbidden); !slices.ContainsFunc([]string{"login in flight", "state"}, func(s string) bool { return strings.Contains(body, s) }) {
		t.Errorf("a forged callback: %s", body)
	}
}
