package dashboard

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"html/template"
	"net/http"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/internal/redact"
)

//go:embed templates/*.html
var templates embed.FS

var page = template.Must(template.New("").ParseFS(templates, "templates/*.html"))

// DefaultRefresh is how often the page reloads itself.
const DefaultRefresh = 10 * time.Second

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

// Handler serves the list at "/", each app's page at "/apps/{name}", and
// the same as JSON at APIPath and APIPath/{name}.
// Everything is rendered on the server; a failed fetch answers 500 with
// a plain message, never a half page.
func Handler(src Source, refresh time.Duration) http.Handler {
	mux := http.NewServeMux()
	api(mux, src)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, req *http.Request) {
		apps, err := src.Apps(req.Context())
		if err != nil {
			fail(w, req, err)
			return
		}
		render(w, req, Build(apps, time.Now(), refresh))
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
		render(w, req, BuildApp(app, time.Now(), refresh))
	})
	if ls, ok := src.(LedgerSource); ok {
		mux.HandleFunc("GET /ledger", func(w http.ResponseWriter, req *http.Request) {
			ledgers, err := ls.Ledgers(req.Context())
			if err != nil {
				fail(w, req, err)
				return
			}
			render(w, req, BuildLedger(ledgers, time.Now(), refresh))
		})
	}
	return mux
}

// Render writes p as HTML.
func Render(p Page) ([]byte, error) {
	var buf bytes.Buffer
	if err := page.ExecuteTemplate(&buf, "layout", p); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func render(w http.ResponseWriter, req *http.Request, p Page) {
	b, err := Render(p)
	if err != nil {
		fail(w, req, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'")
	_, _ = w.Write(b)
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
