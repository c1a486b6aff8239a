// Package dashboard renders pinbot's web pages: the apps, grouped by
// release chain and ordered by environment (sync, health, the proof, the
// version and digest Git pins next to each running Pod's, readiness,
// revision and node); a page per app with its Pods, sync history and
// open promotion pull requests; and a release page per manifest
// repository, its environments as stages in chain order. The pages keep
// themselves current (a small script of the dashboard's own fetches the
// page again every few seconds); no asset comes from elsewhere and the
// Content-Security-Policy allows nothing inline.
//
// The view models are pure functions of what the sources say (Build,
// BuildApp, BuildReleases), so what a page says is tested from literals;
// Handler only fetches and renders.
package dashboard

import (
	"cmp"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"pinbot.dev/pinbot/gitforge"
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
	// Repo, Env and Stage place the app in a release chain: the manifest
	// repository (OWNER/NAME) whose .pinbot.yaml names it, the
	// environment, and the environment's place in the chain. Repo is ""
	// for an app of no chain.
	Repo, Env string
	Stage     int
}

// Page is the view model of every page.
type Page struct {
	Title string
	// Section is the navigation's current entry: "apps" or "releases";
	// ReleasesNav says the release pages exist.
	Section     string
	ReleasesNav bool
	// Refresh is how often the page fetches itself again, in seconds.
	Refresh   int
	Generated Time
	// Groups are the apps page's apps, by release chain.
	Groups []GroupView
	// Detail is set on an app's page.
	Detail *DetailView
	// Releases are set on the release pages.
	Releases []ReleaseView
	// Notices are what could not be read, each once: a peer that is down
	// degrades only the part it feeds.
	Notices []string
	// User is who is signed in, and CSRF their session's form token (for
	// signing out); both "" when nobody is.
	User, CSRF string
}

// GroupView is the apps of one release chain, in environment order, or
// the apps of none (Repo "").
type GroupView struct {
	Repo, Href string
	Apps       []AppView
}

// AppView is one app's row.
type AppView struct {
	Name, Href, Source, Env string
	Sync, SyncClass         string
	Health, HealthClass     string
	HealthReason            string
	// Proof is the proof's state as people should read it: a Verified
	// proof whose Pods are not all Ready says so.
	Proof, ProofClass string
	Verification      string
	Commit            Link
	// Versions are the tags Git writes beside the pinned digests.
	Versions string
	// Ready counts the current revision's Pods that are Ready; Old the
	// Pods of other revisions still there.
	Ready, Pods, Old int
	Error            string
	Changed          Time
	Workloads        []WorkloadView
	OldPods          []PodView
	// Chain is what the release chain says of the app's environment:
	// "Held", "Rollback open", "Rolling back" or "Paused" (see chainBadges).
	Chain []string
}

// Link is a shortened value with the page it links to ("" for none).
type Link struct{ Text, URL string }

// WorkloadView is one container of one workload: the digest Git pins
// (and its tag) and what each Pod of the current revision runs.
type WorkloadView struct {
	Workload, Container string
	Git, Tag            string
	Pods                []PodView
}

// PodView is one container of one Pod. Class is ok, warn (a Verified
// container that is not Ready, or Pending), bad (Mismatch) or
// inconclusive. Reason says why, Evidence what the verdict rests on.
type PodView struct {
	Pod, Container, Running, Tag, Verdict string
	Class                                 string
	Mismatch, Inconclusive                bool
	Ready                                 bool
	// Readiness is "Ready", or why not and since when.
	Readiness      string
	Revision, Node string
	Reason         string
	Evidence       string
}

// DetailView is the app page's extra: history and open pull requests.
type DetailView struct {
	App     AppView
	History []EntryView
	// Pulls are the open promotion pull requests (a forced one says so),
	// Rollbacks the open rollbacks, listed apart.
	Pulls, Rollbacks []Link
}

// EntryView is one sync of the history.
type EntryView struct {
	Time                         Time
	Trigger, Result, ResultClass string
	Reason                       string
	Commit                       Link
	Verified                     bool
	Summary                      string
}

// Build is the apps page at now: apps grouped by release chain (chains
// by repository, then the apps of none), each group in environment
// order, then by name.
func Build(apps []App, now time.Time, refresh time.Duration) Page {
	p := page("pinbot", "apps", now, refresh)
	sorted := slices.Clone(apps)
	slices.SortStableFunc(sorted, func(a, b App) int {
		if (a.Repo == "") != (b.Repo == "") {
			if a.Repo == "" {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.Repo, b.Repo), cmp.Compare(a.Stage, b.Stage), cmp.Compare(a.Name, b.Name))
	})
	for _, a := range sorted {
		if n := len(p.Groups); n == 0 || p.Groups[n-1].Repo != a.Repo {
			g := GroupView{Repo: a.Repo}
			if a.Repo != "" {
				g.Href = releaseHref(a.Repo)
			}
			p.Groups = append(p.Groups, g)
		}
		g := &p.Groups[len(p.Groups)-1]
		g.Apps = append(g.Apps, appView(a, now))
		p.notice(a.Unavailable)
	}
	return p
}

// BuildApp is app's own page at now.
func BuildApp(app App, now time.Time, refresh time.Duration) Page {
	p := page("pinbot: "+app.Name, "apps", now, refresh)
	p.notice(app.Unavailable)
	d := &DetailView{App: appView(app, now)}
	repo := ""
	if app.Status != nil {
		repo = app.Status.Repo
	}
	if app.Record != nil {
		for _, e := range app.Record.Entries {
			d.History = append(d.History, EntryView{
				Time:        at(e.Time, now),
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
		l := Link{Text: "#" + strconv.FormatInt(pr.Number, 10) + " " + pr.Title, URL: safeURL(pr.URL)}
		switch head := "/" + pr.Head; {
		case strings.Contains(head, "/rollback/"):
			d.Rollbacks = append(d.Rollbacks, l)
			continue
		case strings.Contains(head, "/forced/"):
			l.Text += " (forced past the gate)"
		}
		d.Pulls = append(d.Pulls, l)
	}
	p.Detail = d
	return p
}

func page(title, section string, now time.Time, refresh time.Duration) Page {
	return Page{Title: title, Section: section, Refresh: int(refresh / time.Second), Generated: at(now, now)}
}

// notice adds n to the page's notices, once.
func (p *Page) notice(n string) {
	if n != "" && !slices.Contains(p.Notices, n) {
		p.Notices = append(p.Notices, n)
	}
}

func appView(a App, now time.Time) AppView {
	v := AppView{Name: a.Name, Href: "/apps/" + url.PathEscape(a.Name), Source: cmp.Or(a.Source, SourcePinbot), Env: a.Env,
		Sync: "Unknown", SyncClass: "warn", Health: "Unknown", HealthClass: "warn",
		Proof: string(verdict.Pending), ProofClass: "warn", Versions: "-", Commit: Link{Text: "-"}}
	if s := a.Status; s != nil {
		v.Sync, v.SyncClass = string(s.Sync), syncClass(s.Sync)
		v.Health, v.HealthClass, v.HealthReason = string(s.Health), healthClass(s.Health), s.HealthReason
		v.Proof = string(cmp.Or(s.Proof, verdict.Pending))
		if s.Verified {
			v.Proof = string(verdict.Verified)
		}
		v.ProofClass = proofClass(verdict.Verdict(v.Proof))
		v.Verification = s.Verification
		v.Commit = commitLink(s.Repo, s.Commit)
		v.Error = s.Error
		v.OldPods = pods(s.OldPods, now)
	}
	v.Changed = at(changed(a), now)
	if a.Verification != nil {
		v.Workloads = workloads(a.Verification.Containers, now)
		if len(a.Verification.OldRevisions) > 0 {
			v.OldPods = pods(a.Verification.OldRevisions, now)
		}
	}
	v.Ready, v.Pods = readyPods(v.Workloads)
	v.Old = countPods(v.OldPods)
	var tags []string
	for _, w := range v.Workloads {
		if w.Tag != "" && !slices.Contains(tags, w.Tag) {
			tags = append(tags, w.Tag)
		}
	}
	if len(tags) > 0 {
		v.Versions = strings.Join(tags, ", ")
	}
	// A Verified proof of Pods that are not all Ready is not the whole
	// story: the rollout is stuck, or the new Pods fail their probes.
	if v.Proof == string(verdict.Verified) && v.Ready < v.Pods {
		v.Proof, v.ProofClass = "Verified, "+strconv.Itoa(v.Pods-v.Ready)+" not Ready", "warn"
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
func workloads(cs []verdict.ContainerVerdict, now time.Time) []WorkloadView {
	var out []WorkloadView
	idx := map[[2]string]int{}
	for _, c := range cs {
		k := [2]string{c.Workload, c.Container}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, WorkloadView{Workload: c.Workload, Container: c.Container, Git: digestCell(c.GitDigest), Tag: c.Tag})
		}
		out[i].Pods = append(out[i].Pods, podView(c, now))
	}
	return out
}

// pods are the views of cs, in their order.
func pods(cs []verdict.ContainerVerdict, now time.Time) []PodView {
	var out []PodView
	for _, c := range cs {
		out = append(out, podView(c, now))
	}
	return out
}

func podView(c verdict.ContainerVerdict, now time.Time) PodView {
	p := PodView{
		Pod: c.Pod, Container: c.Container, Running: digestCell(c.RunningDigest), Tag: c.Tag, Verdict: string(c.Verdict),
		Mismatch: c.Verdict == verdict.Mismatch, Inconclusive: c.Verdict == verdict.Inconclusive,
		Ready: c.Ready, Readiness: "Ready", Revision: c.Revision, Node: c.Node,
		Reason: c.Reason, Evidence: strings.Join(c.Evidence, "\n"),
	}
	p.Class = proofClass(c.Verdict)
	if !c.Ready {
		p.Readiness = cmp.Or(c.Waiting, "not Ready")
		if c.NotReadySince != nil {
			p.Readiness += " for " + span(now.Sub(*c.NotReadySince))
		}
		if p.Class == "ok" {
			p.Class = "warn"
		}
	}
	return p
}

// readyPods counts the Pods (not containers) of ws and those whose
// containers are all Ready.
func readyPods(ws []WorkloadView) (ready, total int) {
	notReady := map[string]bool{}
	for _, w := range ws {
		for _, p := range w.Pods {
			notReady[p.Pod] = notReady[p.Pod] || !p.Ready
		}
	}
	for _, nr := range notReady {
		if !nr {
			ready++
		}
	}
	return ready, len(notReady)
}

// countPods counts the distinct Pods of ps.
func countPods(ps []PodView) int {
	seen := map[string]bool{}
	for _, p := range ps {
		seen[p.Pod] = true
	}
	return len(seen)
}

// releaseHref is the release page of repo (OWNER/NAME).
func releaseHref(repo string) string {
	owner, name, _ := strings.Cut(repo, "/")
	return "/releases/" + url.PathEscape(owner) + "/" + url.PathEscape(name)
}

func proofClass(v verdict.Verdict) string {
	switch v {
	case verdict.Verified:
		return "ok"
	case verdict.Mismatch, verdict.Unknown:
		return "bad"
	case verdict.Inconclusive:
		return "inconclusive"
	}
	return "warn"
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
