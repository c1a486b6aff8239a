package dashboard

import (
	"cmp"
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/release"
)

// Ledger is one manifest repository's release ledger (package release),
// with what its release page shows beside it.
type Ledger struct {
	Repo   string
	Chain  release.Chain // nil when not known here: the ledger's environments, by name
	Ledger *release.Ledger
	// Web is the repository's page on the forge, for links to its pull
	// requests; "" when not known.
	Web string
	// Apps are the chain's apps by name, as the apps page has them: their
	// Pods, per cluster, on each stage.
	Apps map[string]App
}

// LedgerSource is a Source that also has release ledgers: the dashboard
// then serves the release pages.
type LedgerSource interface {
	Ledgers(ctx context.Context) ([]Ledger, error)
}

// ReleaseView is one repository's release page: its environments as
// stages in chain order, what waits at each gate, the holds and the
// latest decisions.
type ReleaseView struct {
	Repo, Href string
	// Stopped says why the whole chain is stopped.
	Stopped string
	Stages  []StageView
	Events  []EventView
	// Audit is what people did, newest first (pinbot ledger --audit has
	// it all).
	Audit []EventView
}

// StageView is one environment. Class is ok, info (soaking, frozen),
// warn (a digest not proven yet) or bad (failing: held, rolled back,
// its proof broke, its cluster gone); State says it in a word or two and
// Summary why, short, with Detail the whole text.
type StageView struct {
	Name, From, ID  string
	Class, State    string
	Summary, Detail string
	Images          []StageImage
	Clusters        []ClusterPods
	FrozenUntil     Time
	Holds           []HoldView
	Lifted          []EventView
	// Gate is what waits to come in from From; nil for a first stage.
	Gate *ArrowView
	// Actions are what the signed-in person may do here (see Actor).
	Actions []Link
	// DORA is what the ledger tallied of DORA's four keys here; nil
	// before the first proven deployment or failure.
	DORA *doraFigures
}

// StageImage is one image in one environment.
type StageImage struct {
	Image          string
	Pinned, Proven Version
	ProvenSince    Time
	Soak           *SoakView
	Why            string
	Proposal       *PullView
	Rollback       *PullView
	// Actions are what the signed-in person may do to this image here:
	// roll it back, hold the pinned digest.
	Actions  []Link
	pinned   string
	standing release.Standing // what the actions offered ask
}

// Version is a digest and the tag it is known by.
type Version struct{ Tag, Digest string }

// SoakView is the progress of a soak: Held of Need seconds.
type SoakView struct {
	Done       bool
	Held, Need int
	Text       string
}

// PullView is pinbot's open pull request into an environment.
type PullView struct {
	Link        Link
	Text, Class string
}

// ArrowView is what waits at a stage's gate, for the arrow into it.
type ArrowView struct{ Text, Class string }

// HoldView is one hold.
type HoldView struct {
	Image  string
	Digest Version
	Since  Time
	Reason string
	Detail string // the whole reason
	From   string
	// Release is the action that lifts the hold, when the signed-in
	// person may.
	Release string
	full    string
}

// EventView is one decision.
type EventView struct {
	At                       Time
	Env, Image, Reason, What string
	Class                    string
	By, Why                  string // a person's, and their reason
}

// BuildReleases is the release page of ledgers at now.
func BuildReleases(ledgers []Ledger, now time.Time, refresh time.Duration) Page {
	title := "pinbot: releases"
	if len(ledgers) == 1 {
		title = "pinbot: " + ledgers[0].Repo
	}
	p := page(title, "releases", now, refresh)
	for _, lg := range ledgers {
		p.Releases = append(p.Releases, releaseView(lg, now))
		for _, a := range lg.Apps {
			p.notice(a.Unavailable)
		}
	}
	return p
}

func releaseView(lg Ledger, now time.Time) ReleaseView {
	l := lg.Ledger
	rv := ReleaseView{Repo: lg.Repo, Href: releaseHref(lg.Repo), Stopped: l.Stopped}
	for _, env := range envOrder(lg) {
		e, _ := lg.Chain.Get(env)
		if e == nil {
			e = &release.Environment{Name: env}
		}
		rv.Stages = append(rv.Stages, stageView(lg, e, now))
	}
	tags := versions(l)
	for i := len(l.Events) - 1; i >= 0 && len(rv.Events) < 20; i-- {
		rv.Events = append(rv.Events, eventView(l.Events[i], now, tags))
	}
	for i := len(l.Audit) - 1; i >= 0 && len(rv.Audit) < 10; i-- {
		rv.Audit = append(rv.Audit, eventView(l.Audit[i], now, tags))
	}
	return rv
}

// stageView is env's stage: its images, Pods, holds, and what waits at
// its gate; the worst of its images and clusters sets its state.
func stageView(lg Ledger, env *release.Environment, now time.Time) StageView {
	l := lg.Ledger
	s := StageView{Name: env.Name, From: env.From, ID: "stage-" + env.Name, Class: "ok", State: "Proven"}
	worst := 0
	judge := func(rank int, class, state, why string) {
		if rank > worst {
			worst, s.Class, s.State = rank, class, state
			s.Summary, s.Detail = brief(why)
		}
	}
	for _, image := range l.Images(env.Name) {
		st := release.StandingOf(l, lg.Chain, env.Name, image, now)
		t := st.Track
		si := StageImage{Image: image, pinned: t.Pinned, Pinned: Version{t.PinnedTag, imageref.Short(t.Pinned)},
			Proven: Version{tagOf(t, t.Proven), imageref.Short(t.Proven)}, ProvenSince: atPtr(t.ProvenSince, now), standing: st}
		if st.Soak > 0 {
			si.Soak = &SoakView{Done: !st.Soaking(), Held: int(st.Soaked / time.Second), Need: int(st.Soak / time.Second), Text: "soaked " + span(st.Soak)}
			if st.Soaking() {
				si.Soak.Text = span(st.Soaked) + " of " + span(st.Soak) + ", " + span(st.Soak-st.Soaked) + " to go"
				judge(1, "info", "Soaking", "soaking: "+span(st.Soak-st.Soaked)+" to go")
			}
		}
		if t.Pinned != "" && t.Proven != t.Pinned {
			si.Why = t.Why
			judge(2, "warn", "Proving", cmp.Or(t.Why, "not proven yet"))
		}
		if p := t.Proposal; p != nil {
			si.Proposal = &PullView{Link: pullLink(lg.Web, p.PR, "#"+itoa(p.PR)), Text: "promotes " + label(Version{p.Tag, imageref.Short(p.Digest)}) + withGroup(p.Group), Class: "info"}
			if g := p.Gate; g != nil {
				si.Proposal.Text += "; gate " + string(g.State) + ": " + g.Description
				si.Proposal.Class = gateClass(string(g.State))
			}
		}
		if t.Bypassed() {
			judge(3, "bad", "Past the gate", label(si.Pinned)+" merged past pinbot's gate: "+t.Merged.Bypass+forcedBy(l, env.Name, image, t.Pinned)+"; its proof lifts no hold and is not attested")
		}
		if m := t.Merged; m != nil && m.FailingSince != nil && !m.Done {
			judge(3, "bad", "Proof broke", "the proof of "+label(si.Pinned)+" broke "+at(*m.FailingSince, now).Rel+": "+t.Why)
		}
		if h := st.Hold; h != nil {
			judge(4, "bad", "Held", label(si.Pinned)+" is held: "+h.Reason)
		}
		if p := t.Rollback; p != nil {
			to := label(Version{cmp.Or(p.Tag, tagOf(t, p.Digest)), imageref.Short(p.Digest)})
			text := "rolls back to " + to + " from " + imageref.Short(p.Failed) + withGroup(p.Group)
			if p.PR == 0 {
				text += " (decided; the pull request is being opened)"
			}
			si.Rollback = &PullView{Link: pullLink(lg.Web, p.PR, "#"+itoa(p.PR)), Text: text, Class: "bad"}
			// Open, not done: nothing is rolled back until it merges.
			why := label(Version{tagOf(t, p.Failed), imageref.Short(p.Failed)}) + " failed; the rollback to " + to + " is open"
			if p.PR == 0 {
				why = label(Version{tagOf(t, p.Failed), imageref.Short(p.Failed)}) + " failed; the rollback to " + to + " is being opened"
			}
			if e := st.RollbackCause(); e != "" {
				why += ": " + e
			}
			if t.Proven == p.Failed && t.ProvenSince != nil {
				// Proven past its deadline: the rollback stands (see
				// docs/environments.md); a person may close it.
				why += "; it proved " + at(*t.ProvenSince, now).Rel + ", after its deadline: the rollback stands until a person closes it and releases the hold"
			}
			judge(5, "bad", "Rollback open", why)
		}
		if m := t.Merged; m != nil && m.Rollback && m.Digest == t.Pinned && t.Proven != t.Pinned {
			judge(5, "bad", "Rolling back", "the rollback to "+label(si.Pinned)+" merged "+at(m.At, now).Rel+"; it is not proven yet")
		}
		if t.FrozenUntil != nil && t.FrozenUntil.After(now) {
			s.FrozenUntil = at(*t.FrozenUntil, now)
		}
		s.Images = append(s.Images, si)
	}
	s.Clusters = clusterPods(lg, env, now)
	s.DORA = doraOf(l.DORA[env.Name], now)
	for _, c := range s.Clusters {
		if c.Unknown != "" {
			judge(6, "bad", "Unknown", c.Unknown)
		}
	}
	if worst <= 1 && s.FrozenUntil != (Time{}) {
		s.Class, s.State, s.Summary, s.Detail = "info", "Frozen", "a freeze window holds it until "+s.FrozenUntil.Abs, ""
	}
	if len(s.Images) == 0 {
		s.Class, s.State, s.Summary = "warn", "Nothing yet", "no image tracked here yet"
	}
	for _, h := range l.Holds {
		if h.Env == env.Name {
			reason, _ := brief(h.Reason)
			s.Holds = append(s.Holds, HoldView{Image: h.Image, Digest: Version{tagOf(l.Lookup(h.Env, h.Image), h.Digest), imageref.Short(h.Digest)}, Since: at(h.Since, now), Reason: reason, Detail: h.Reason, From: h.From, full: h.Digest})
		}
	}
	tags := versions(l)
	for i := len(l.Events) - 1; i >= 0 && len(s.Lifted) < 3; i-- {
		if e := l.Events[i]; e.Env == env.Name && e.Reason == release.ReasonHoldLifted {
			s.Lifted = append(s.Lifted, eventView(e, now, tags))
		}
	}
	if env.From != "" {
		s.Gate = gate(lg, env, now)
	}
	return s
}

// gate says what waits to move into env from its upstream, per image
// proven there, as the release chain decides it (release.Next): in,
// held, brought back or proposed by a pull request, blocked by a
// rollback, a freeze or a merge still settling, or next.
func gate(lg Ledger, env *release.Environment, now time.Time) *ArrowView {
	l := lg.Ledger
	var parts []string
	class := "ok"
	worse := func(c string) {
		order := map[string]int{"ok": 0, "info": 1, "warn": 2, "bad": 3}
		if order[c] > order[class] {
			class = c
		}
	}
	for _, image := range l.Images(env.From) {
		m, ok := release.Next(l, lg.Chain, env.Name, image, now)
		if !ok {
			continue
		}
		v := label(Version{tagOf(l.Lookup(env.From, image), m.Digest), imageref.Short(m.Digest)})
		switch m.State {
		case release.MoveIn:
			parts = append(parts, v+" is in")
		case release.MoveHeld:
			parts = append(parts, v+" is held here")
			worse("bad")
		case release.MoveReturning:
			parts = append(parts, v+" comes back with the rollback #"+itoa(m.PR))
			worse("bad")
		case release.MoveProposed:
			parts = append(parts, v+" waits in #"+itoa(m.PR))
			worse("info")
		case release.MoveRollingBack:
			parts = append(parts, v+" waits: "+env.Name+" rolls back (#"+itoa(m.PR)+")")
			worse("warn")
		case release.MoveRanBefore:
			parts = append(parts, v+" ran here before: only a rollback goes back to it")
		case release.MoveSettling:
			parts = append(parts, v+" waits: the last merge into "+env.Name+" is still proving")
			worse("info")
		case release.MovePaused:
			parts = append(parts, v+" waits: "+m.Pause.By+" paused the promotions into "+env.Name+": "+m.Pause.Why)
			worse("warn")
		case release.MoveFrozen:
			parts = append(parts, v+" waits for the freeze to end, "+span(m.Until.Sub(now))+" from now")
			worse("info")
		default:
			if m.Left > 0 {
				parts = append(parts, v+" soaks upstream, "+span(m.Left)+" to go")
			} else {
				parts = append(parts, v+" is next")
			}
			worse("info")
		}
	}
	if len(parts) == 0 {
		return &ArrowView{Text: "nothing proven in " + env.From + " yet", Class: "warn"}
	}
	return &ArrowView{Text: strings.Join(parts, "; "), Class: class}
}

// withGroup says that a pull request moves an image with its group.
func withGroup(group string) string {
	if group == "" {
		return ""
	}
	return ", with its group " + group
}

// label is a version as text: "v3 (sha256:abc…)", or the digest alone.
func label(v Version) string {
	switch {
	case v.Digest == "":
		return "-"
	case v.Tag == "":
		return v.Digest
	}
	return v.Tag + " (" + v.Digest + ")"
}

func eventView(e release.Event, now time.Time, tags map[string]string) EventView {
	ev := EventView{At: at(e.At, now), Env: e.Env, Image: e.Image, Reason: e.Reason, What: withVersions(e.What, tags), Class: "ok", By: e.By, Why: e.Why}
	if release.Warning(e.Reason) {
		ev.Class = "bad"
	}
	return ev
}

// brief splits a long text into its first sentence or line, at most 140
// characters cut at a word, and the whole text when that is longer.
func brief(s string) (summary, detail string) {
	s = strings.TrimSpace(s)
	first, _, more := strings.Cut(s, "\n")
	if len(first) > 140 {
		cut := strings.LastIndexByte(first[:140], ' ')
		if cut < 60 {
			cut = 140
		}
		first, more = strings.TrimRight(first[:cut], " ,;:")+"…", true
	}
	if more {
		return first, s
	}
	return first, ""
}

func gateClass(state string) string {
	switch state {
	case "success":
		return "ok"
	case "failure", "error":
		return "bad"
	}
	return "info"
}

// envOrder is the chain's order where known, else the ledger's names.
func envOrder(lg Ledger) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range lg.Chain {
		out = append(out, e.Name)
		seen[e.Name] = true
	}
	var rest []string
	for env := range lg.Ledger.Envs {
		if !seen[env] {
			rest = append(rest, env)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// forcedBy says who forced digest of image into env and why, when the
// ledger's audit has it (a force from the release page).
func forcedBy(l *release.Ledger, env, image, digest string) string {
	for i := len(l.Audit) - 1; i >= 0; i-- {
		a := l.Audit[i]
		if a.Env == env && a.Image == image && a.Reason == release.ReasonPromotionOpened && strings.Contains(a.What, imageref.Short(digest)) {
			return "; forced in by " + a.By + ": " + a.Why
		}
	}
	return ""
}
