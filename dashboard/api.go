package dashboard

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"time"

	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// APIPath is the root of the JSON API the dashboard's pages and
// `pinbot status --server` read.
const APIPath = "/api/v1/apps"

// APIApp is one app in the JSON API (camelCase, as Kubernetes' APIs
// are). It is the API's contract, kept apart from the stored status.
type APIApp struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	// Sync, Health and Proof are Unknown (Pending for Proof) before the
	// first pass.
	Sync         string `json:"sync"`
	Health       string `json:"health"`
	HealthReason string `json:"healthReason,omitempty"`
	Verified     bool   `json:"verified"`
	Proof        string `json:"proof"`
	Verification string `json:"verification,omitempty"`
	Repo         string `json:"repo,omitempty"`
	Branch       string `json:"branch,omitempty"`
	Path         string `json:"path,omitempty"`
	HeadCommit   string `json:"headCommit,omitempty"`
	// DeployedCommit is what the deployer (pinbot, Argo CD or Flux) last
	// deployed.
	DeployedCommit string       `json:"deployedCommit,omitempty"`
	OutOfSync      []object.Ref `json:"outOfSync,omitempty"`
	Orphaned       []object.Ref `json:"orphaned,omitempty"`
	Error          string       `json:"error,omitempty"`
	ObservedAt     *time.Time   `json:"observedAt,omitempty"`
	// Unavailable says which peer could not be read for this answer.
	Unavailable string `json:"unavailable,omitempty"`
	// Containers, History and Pulls are only in one app's answer.
	Containers []verdict.ContainerVerdict `json:"containers,omitempty"`
	History    []APIEntry                 `json:"history,omitempty"`
	Pulls      []APIPull                  `json:"pulls,omitempty"`
}

// APIEntry is one sync of the app's history.
type APIEntry struct {
	Commit   string    `json:"commit"`
	Time     time.Time `json:"time"`
	Trigger  string    `json:"trigger"`
	Result   string    `json:"result"`
	Reason   string    `json:"reason,omitempty"`
	Verified bool      `json:"verified"`
	Summary  string    `json:"summary,omitempty"`
}

// APIPull is an open promotion pull request into the app's repository.
type APIPull struct {
	Number int64  `json:"number"`
	Title  string `json:"title"`
	URL    string `json:"url"`
}

// APIList is the answer of APIPath.
type APIList struct {
	Apps []APIApp `json:"apps"`
}

// apiApp is a's API view; detail adds the Pods, the history and the pull
// requests.
func apiApp(a App, detail bool) APIApp {
	out := APIApp{Name: a.Name, Source: cmp.Or(a.Source, SourcePinbot), Sync: "Unknown", Health: "Unknown",
		Proof: string(verdict.Pending), Unavailable: a.Unavailable}
	if s := a.Status; s != nil {
		out.Sync, out.Health, out.HealthReason = string(s.Sync), string(s.Health), s.HealthReason
		out.Verified, out.Verification, out.Error = s.Verified, s.Verification, s.Error
		out.Repo, out.Branch, out.Path = s.Repo, s.Branch, s.Path
		out.HeadCommit, out.DeployedCommit = s.HeadCommit, s.DeployedCommit
		out.OutOfSync, out.Orphaned = s.OutOfSync, s.Orphaned
		at := s.ObservedAt
		out.ObservedAt = &at
		out.Proof = string(cmp.Or(s.Proof, verdict.Pending))
		if s.Verified {
			out.Proof = string(verdict.Verified)
		}
	}
	if !detail {
		return out
	}
	if v := a.Verification; v != nil {
		out.Containers = v.Containers
	}
	if a.Record != nil {
		for _, e := range a.Record.Entries {
			out.History = append(out.History, APIEntry{Commit: e.Commit, Time: e.Time, Trigger: e.Trigger, Result: string(e.Result),
				Reason: e.Reason, Verified: e.Verified, Summary: e.Summary})
		}
	}
	for _, p := range a.Pulls {
		out.Pulls = append(out.Pulls, APIPull{Number: p.Number, Title: p.Title, URL: p.URL})
	}
	return out
}

// api registers the JSON API on mux.
func api(mux *http.ServeMux, src Source) {
	mux.HandleFunc("GET "+APIPath, func(w http.ResponseWriter, req *http.Request) {
		apps, err := src.Apps(req.Context())
		if err != nil {
			apiFail(w, req, err, http.StatusInternalServerError)
			return
		}
		list := APIList{Apps: []APIApp{}}
		for _, a := range apps {
			list.Apps = append(list.Apps, apiApp(a, false))
		}
		slices.SortFunc(list.Apps, func(a, b APIApp) int { return cmp.Compare(a.Name, b.Name) })
		writeJSON(w, list)
	})
	mux.HandleFunc("GET "+APIPath+"/{name}", func(w http.ResponseWriter, req *http.Request) {
		app, err := src.App(req.Context(), req.PathValue("name"))
		if errors.Is(err, ErrNoApp) {
			apiFail(w, req, err, http.StatusNotFound)
			return
		}
		if err != nil {
			apiFail(w, req, err, http.StatusInternalServerError)
			return
		}
		writeJSON(w, apiApp(app, true))
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func apiFail(w http.ResponseWriter, req *http.Request, err error, code int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": message(req, err)})
}
