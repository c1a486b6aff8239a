// Package dashboard renders pinbot's web page: one server-rendered HTML page
// listing every app (sync, health, verification, the commit, and per
// workload the digest Git pins next to each running Pod's), and a page per
// app with its sync history and open promotion pull requests. No
// JavaScript: the page refreshes itself with a meta refresh.
//
// The view model is a pure function of the apps' statuses (Build), so what
// the page says is tested from literals; Handler only fetches and renders.
package dashboard

import (
	"cmp"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// Sources of an app.
const (
	SourcePinbot = "pinbot"
	SourceArgoCD = "argocd"
	SourceFlux   = "flux"
)

// App is what the dashboard is given about one app.
type App struct {
	// Name of the app.
	Name string
	// Source says who syncs it: SourcePinbot, SourceArgoCD or SourceFlux.
	Source string
	// Status is the last pass's status; nil before the first pass.
	Status *status.App
	// Verification is the last pass's verification; nil when none ran.
	Verification *verdict.Verification
	// Record is the persisted status and sync history; nil when none.
	Record *history.Record
	// Pulls are the open promotion pull requests into the app's repository
	// (only asked for on the app's page).
	Pulls []gitforge.Pull
	// Unavailable says what could not be read for the app (its stored
	// status, its pull requests), and why: the page shows the rest.
	Unavailable string
}

// Page is the view model of either page.
type Page struct {
	Title string
	// Refresh is the meta refresh period in seconds; 0 for none.
	Refresh int
	// Generated is when the page was built, RFC 3339 UTC.
	Generated string
	Apps      []AppView
	// Detail is set on an app's page.
	Detail *DetailView
	// Ledger is set on the ledger page.
	Ledger *LedgerView
	// Notices are what could not be read, each once: a peer that is down
	// degrades only the part it feeds.
	Notices []string
}

// AppView is one app's row.
type AppView struct {
	Name, Href, Source  string
	Sync, SyncClass     string
	Health, HealthClass string
	HealthReason        string
	Verified            bool
	Verification        string
	VerifyClass         string
	Commit              Link
	Error               string
	Changed             string
	Workloads           []WorkloadView
}

// Link is a shortened value with the page it links to ("" for none).
type Link struct{ Text, URL string }

// WorkloadView is one container of one workload: the digest Git pins and
// what each Pod of the current revision runs.
type WorkloadView struct {
	Workload, Container string
	Git                 string
	Pods                []PodView
}

// PodView is one Pod's running digest; Mismatch marks it red and
// Inconclusive (an index/platform relation the registry could not prove)
// amber. Reason says why, Evidence what the verdict rests on.
type PodView struct {
	Pod, Running, Verdict  string
	Mismatch, Inconclusive bool
	Reason                 string
	Evidence               string
}

// DetailView is the app page's extra: history and open pull requests.
type DetailView struct {
	History []EntryView
	Pulls   []Link
}

// EntryView is one sync of the history.
type EntryView struct {
	Time, Trigger, Result, ResultClass, Reason string
	Commit                                     Link
	Verified                                   bool
	Summary                                    string
}

// Build is the list page for apps at now: sorted by name, refreshing every
// refresh seconds.
func Build(apps []App, now time.Time, refresh time.Duration) Page {
	p := Page{Title: "pinbot", Refresh: int(refresh / time.Second), Generated: now.UTC().Format(time.RFC3339)}
	for _, a := range apps {
		p.Apps = append(p.Apps, appView(a))
		if a.Unavailable != "" && !slices.Contains(p.Notices, a.Unavailable) {
			p.Notices = append(p.Notices, a.Unavailable)
		}
	}
	slices.SortFunc(p.Apps, func(a, b AppView) int { return cmp.Compare(a.Name, b.Name) })
	return p
}

// BuildApp is app's own page at now.
func BuildApp(app App, now time.Time, refresh time.Duration) Page {
	p := Build([]App{app}, now, refresh)
	p.Title = "pinbot: " + app.Name
	d := &DetailView{}
	repo := ""
	if app.Status != nil {
		repo = app.Status.Repo
	}
	if app.Record != nil {
		for _, e := range app.Record.Entries {
			d.History = append(d.History, EntryView{
				Time:        e.Time.UTC().Format(time.RFC3339),
				Trigger:     e.Trigger,
				Result:      string(e.Result),
				ResultClass: resultClass(e.Result),
				Reason:      e.Reason,
				Commit:      commitLink(repo, e.Commit),
				Verified:    e.Verified,
				Summary:     e.Summary,
			})
		}
	}
	for _, pr := range app.Pulls {
		d.Pulls = append(d.Pulls, Link{Text: "#" + strconv.FormatInt(pr.Number, 10) + " " + pr.Title, URL: safeURL(pr.URL)})
	}
	p.Detail = d
	return p
}

func appView(a App) AppView {
	v := AppView{Name: a.Name, Href: "/apps/" + url.PathEscape(a.Name), Source: cmp.Or(a.Source, SourcePinbot),
		Sync: "Unknown", SyncClass: "warn", Health: "Unknown", HealthClass: "warn", VerifyClass: "warn"}
	if s := a.Status; s != nil {
		v.Sync, v.SyncClass = string(s.Sync), syncClass(s.Sync)
		v.Health, v.HealthClass, v.HealthReason = string(s.Health), healthClass(s.Health), s.HealthReason
		v.Verified, v.Verification = s.Verified, s.Verification
		if s.Verified {
			v.VerifyClass = "ok"
		}
		v.Commit = commitLink(s.Repo, s.Commit)
		v.Error = s.Error
	}
	if v.Verification == "" {
		v.Verification = "not verified"
	}
	if t := changed(a); !t.IsZero() {
		v.Changed = t.UTC().Format(time.RFC3339)
	}
	if a.Verification != nil {
		v.Workloads = workloads(a.Verification.Containers)
		for _, w := range v.Workloads {
			for _, p := range w.Pods {
				if p.Mismatch {
					v.VerifyClass = "bad"
				}
			}
		}
	}
	return v
}

// changed is when the app last changed: its last sync or the persisted
// status (written only when it changes), whichever is later.
func changed(a App) time.Time {
	var t time.Time
	if r := a.Record; r != nil {
		if r.Status != nil {
			t = r.Status.ObservedAt
		}
		if len(r.Entries) > 0 && r.Entries[0].Time.After(t) {
			t = r.Entries[0].Time
		}
	}
	return t
}

// workloads groups container verdicts by workload and container, in
// order of first appearance, each Pod next to the digest Git pins.
func workloads(cs []verdict.ContainerVerdict) []WorkloadView {
	var out []WorkloadView
	idx := map[[2]string]int{}
	for _, c := range cs {
		k := [2]string{c.Workload, c.Container}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, WorkloadView{Workload: c.Workload, Container: c.Container, Git: digestCell(c.GitDigest)})
		}
		out[i].Pods = append(out[i].Pods, PodView{
			Pod: c.Pod, Running: digestCell(c.RunningDigest), Verdict: string(c.Verdict),
			Mismatch: c.Verdict == verdict.Mismatch, Inconclusive: c.Verdict == verdict.Inconclusive,
			Reason: c.Reason, Evidence: strings.Join(c.Evidence, "\n"),
		})
	}
	return out
}

// digestCell is a digest as a table cell shows it: short, or "-" for none.
func digestCell(d string) string {
	if d == "" {
		return "-"
	}
	return imageref.Short(d)
}

// commitLink links sha to its page on the forge: Gitea (like GitHub)
// shows a commit at <repo web URL>/commit/<sha>. A repository that is
// not http(s) gets no link, and a revision that is no commit id (the
// version of a chart of a Helm repository) shows whole, unlinked.
func commitLink(repo, sha string) Link {
	if sha == "" {
		return Link{Text: "-"}
	}
	if !isCommitID(sha) {
		return Link{Text: sha}
	}
	l := Link{Text: sha[:min(len(sha), 8)]}
	u, err := url.Parse(repo)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return l
	}
	u.User = nil
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), ".git") + "/commit/" + url.PathEscape(sha)
	l.URL = u.String()
	return l
}

// isCommitID reports whether s is a full Git commit id (SHA-1 or SHA-256).
func isCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// safeURL passes http(s) URLs only.
func safeURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	return s
}

func syncClass(s status.SyncState) string {
	switch s {
	case status.Synced:
		return "ok"
	case status.OutOfSync:
		return "warn"
	}
	return "bad"
}

func healthClass(h verdict.Health) string {
	switch h {
	case verdict.Healthy:
		return "ok"
	case verdict.Progressing:
		return "warn"
	}
	return "bad"
}

func resultClass(r history.Result) string {
	if r == history.Applied {
		return "ok"
	}
	return "bad"
}
