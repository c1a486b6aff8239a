package dashboard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
)

var (
	//go:embed templates/*.html
	templates embed.FS
	//go:embed assets
	assets embed.FS
)

var pages = template.Must(template.New("").ParseFS(templates, "templates/*.html"))

// DefaultRefresh is how often a page fetches itself again.
const DefaultRefresh = 5 * time.Second

// LiveHeader, on a request for a page, asks for its <main> alone: what
// the page's script fetches to update itself without a reload.
const LiveHeader = "X-Pinbot-Live"

// csp allows the dashboard's own stylesheet, script and fetches, and
// nothing else: no inline style or script, no other origin, no frames;
// forms (sign-out) post to the dashboard alone.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// ErrNoApp is what Source.App returns for a name it does not know; the
// handler answers 404.
var ErrNoApp = errors.New("no such app")

// Source is where the dashboard gets its apps.
type Source interface {
	// Apps are every app, without Pulls.
	Apps(ctx context.Context) ([]App, error)
	// App is one app with its Record and Pulls; ErrNoApp (wrapped) when
	// there is none of that name.
	App(ctx context.Context, name string) (App, error)
}

// Handler serves the apps at "/", each app's page at "/apps/{name}", the
// release pages at "/releases" and "/releases/{owner}/{name}" when src
// is a LedgerSource, the pages' stylesheet and script under "/assets/",
// and the apps as JSON at APIPath and APIPath/{name}. Everything is
// rendered on the server; a failed fetch answers 500 with a plain
// message, never a half page.
func Handler(src Source, refresh time.Duration) http.Handler {
	mux := http.NewServeMux()
	api(mux, src)
	mux.Handle("GET /assets/", assetHandler())
	ls, releases := src.(LedgerSource)
	show := func(w http.ResponseWriter, req *http.Request, p Page) {
		p.ReleasesNav = releases
		if a, ok := src.(Actor); ok {
			p.User, p.CSRF = a.Person(req)
		}
		render(w, req, p)
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, req *http.Request) {
		apps, err := src.Apps(req.Context())
		if err != nil {
			fail(w, req, err)
			return
		}
		p := Build(apps, time.Now(), refresh)
		if releases {
			if ledgers, err := ls.Ledgers(req.Context()); err == nil {
				chainBadges(&p, apps, ledgers)
			} else {
				p.notice("release ledgers: " + err.Error())
			}
		}
		show(w, req, p)
	})
	mux.HandleFunc("GET /apps/{name}", func(w http.ResponseWriter, req *http.Request) {
		app, err := src.App(req.Context(), req.PathValue("name"))
		if errors.Is(err, ErrNoApp) {
			http.Error(w, "no app "+req.PathValue("name"), http.StatusNotFound)
			return
		}
		if err != nil {
			fail(w, req, err)
			return
		}
		show(w, req, BuildApp(app, time.Now(), refresh))
	})
	if !releases {
		return mux
	}
	mux.HandleFunc("GET /releases", func(w http.ResponseWriter, req *http.Request) {
		ledgers, err := ls.Ledgers(req.Context())
		if err != nil {
			fail(w, req, err)
			return
		}
		show(w, req, releasesPage(ledgers, req, src, refresh))
	})
	mux.HandleFunc("GET /releases/{owner}/{name}", func(w http.ResponseWriter, req *http.Request) {
		repo := req.PathValue("owner") + "/" + req.PathValue("name")
		ledgers, err := ls.Ledgers(req.Context())
		if err != nil {
			fail(w, req, err)
			return
		}
		for _, lg := range ledgers {
			if lg.Repo == repo {
				show(w, req, releasesPage([]Ledger{lg}, req, src, refresh))
				return
			}
		}
		http.Error(w, "no release chain in "+repo, http.StatusNotFound)
	})
	// The release pages were one ledger page before.
	mux.Handle("GET /ledger", http.RedirectHandler("/releases", http.StatusMovedPermanently))
	return mux
}

// releasesPage is the release page of ledgers, with the actions src
// offers req's person when it is an Actor.
func releasesPage(ledgers []Ledger, req *http.Request, src Source, refresh time.Duration) Page {
	p := BuildReleases(ledgers, time.Now(), refresh)
	if a, ok := src.(Actor); ok {
		offer(&p, ledgers, req, a)
	}
	return p
}

// renderPage writes p as HTML: the whole page, or with live its <main> alone.
func renderPage(p Page, live bool) ([]byte, error) {
	name := "layout"
	if live {
		name = "main"
	}
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, p); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func render(w http.ResponseWriter, req *http.Request, p Page) {
	b, err := renderPage(p, req.Header.Get(LiveHeader) != "")
	if err != nil {
		fail(w, req, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", csp)
	h.Set("Cache-Control", "no-store")
	h.Set("Vary", LiveHeader)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	_, _ = w.Write(b)
}

// assetHandler serves the embedded stylesheet and script, revalidated
// by their content's hash.
func assetHandler() http.Handler {
	type asset struct {
		body        []byte
		etag, ctype string
	}
	files := map[string]asset{}
	_ = fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		files["/"+p] = asset{body: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, ctype: mime.TypeByExtension(path.Ext(p))}
		return nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		a, ok := files[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.ctype)
		h.Set("ETag", a.etag)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		if strings.Contains(req.Header.Get("If-None-Match"), a.etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write(a.body)
	})
}

func fail(w http.ResponseWriter, req *http.Request, err error) {
	http.Error(w, message(req, err), http.StatusInternalServerError)
}

// message logs err and returns its first line, redacted, for an answer.
func message(req *http.Request, err error) string {
	logctx.From(req.Context()).Warn("dashboard", "path", req.URL.Path, "err", err)
	msg := redact.String(err.Error())
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}
