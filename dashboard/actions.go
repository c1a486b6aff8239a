package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/internal/imageref"
)

// Actor is a LedgerSource whose release pages offer a signed-in person
// the actions the cluster's RBAC allows them. Allowed says which verbs
// ("pause", "resume", "promote", "rollback", "hold", "release", "force") req's person may use on env of repo;
// none for a reader who is not signed in.
type Actor interface {
	Allowed(req *http.Request, repo, env string) []string
	// Person is who req is from when they signed in, and their session's
	// form token; "" for anyone else.
	Person(req *http.Request) (user, csrf string)
}

// offer adds to p's stages the actions a may let req's person take: each
// a link to the action's confirmation, which says what it will do.
func offer(p *Page, ledgers []Ledger, req *http.Request, a Actor) {
	for i := range p.Releases {
		rv := &p.Releases[i]
		var l *Ledger
		for j := range ledgers {
			if ledgers[j].Repo == rv.Repo {
				l = &ledgers[j]
			}
		}
		if l == nil {
			continue
		}
		for k := range rv.Stages {
			st := &rv.Stages[k]
			verbs := a.Allowed(req, rv.Repo, st.Name)
			q := url.Values{"repo": {rv.Repo}, "env": {st.Name}}
			_, paused := l.Ledger.Paused[st.Name]
			switch {
			case paused && slices.Contains(verbs, "resume"):
				st.Actions = append(st.Actions, Link{Text: "Resume promotions", URL: "/actions/resume?" + q.Encode()})
			case !paused && slices.Contains(verbs, "pause"):
				st.Actions = append(st.Actions, Link{Text: "Pause promotions", URL: "/actions/pause?" + q.Encode()})
			}
			for m := range st.Images {
				si := &st.Images[m]
				iq := url.Values{"repo": {rv.Repo}, "env": {st.Name}, "image": {si.Image}}
				if t := l.Ledger.Lookup(st.Name, si.Image); t != nil && t.Proposal != nil && t.Proposal.Gate != nil && t.Proposal.Gate.State == commitstatus.Success &&
					slices.Contains(verbs, "promote") {
					si.Actions = append(si.Actions, Link{Text: fmt.Sprintf("Merge #%d now", t.Proposal.PR), URL: "/actions/promote?" + iq.Encode()})
				}
				if t := l.Ledger.Lookup(st.Name, si.Image); t != nil && slices.Contains(verbs, "rollback") && t.Rollback == nil && t.RollbackAsked == nil &&
					(t.LastProven != "" && t.LastProven != t.Pinned || t.PrevProven != "") {
					si.Actions = append(si.Actions, Link{Text: "Roll back", URL: "/actions/rollback?" + iq.Encode()})
				}
				if f := si.standing.Forcible; f != "" && slices.Contains(verbs, "force") {
					fq := url.Values{"repo": {rv.Repo}, "env": {st.Name}, "image": {si.Image}, "digest": {f}}
					si.Actions = append(si.Actions, Link{Text: "Force " + label(Version{si.standing.ForcibleTag, imageref.Short(f)}) + " in", URL: "/actions/force?" + fq.Encode()})
				}
				if si.pinned != "" && slices.Contains(verbs, "hold") && si.standing.Hold == nil {
					iq.Set("digest", si.pinned)
					si.Actions = append(si.Actions, Link{Text: "Hold", URL: "/actions/hold?" + iq.Encode()})
				}
			}
			if !slices.Contains(verbs, "release") {
				continue
			}
			for h := range st.Holds {
				hq := url.Values{"repo": {rv.Repo}, "env": {st.Name}, "image": {st.Holds[h].Image}, "digest": {st.Holds[h].full}}
				st.Holds[h].Release = "/actions/release?" + hq.Encode()
			}
		}
	}
}
