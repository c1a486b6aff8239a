package dashboard

import (
	"slices"
	"time"

	"pinbot.dev/pinbot/release"
)

// chainBadges marks each app of p whose environment the release chain
// holds back: a digest pinned there held, its rollback open or merged and
// not proven yet, its promotions paused. apps are p's, with their
// repositories and environments.
func chainBadges(p *Page, apps []App, ledgers []Ledger) {
	where := map[string][2]string{}
	for _, a := range apps {
		where[a.Name] = [2]string{a.Repo, a.Env}
	}
	for g := range p.Groups {
		for i := range p.Groups[g].Apps {
			av := &p.Groups[g].Apps[i]
			repoEnv, ok := where[av.Name]
			if !ok || repoEnv[1] == "" {
				continue
			}
			for _, lg := range ledgers {
				if lg.Repo == repoEnv[0] {
					av.Chain = envBadges(lg.Ledger, repoEnv[1])
				}
			}
		}
	}
}

// envBadges is what l says holds env back, each once.
func envBadges(l *release.Ledger, env string) []string {
	var out []string
	add := func(b string) {
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	for _, image := range l.Images(env) {
		t := l.Lookup(env, image)
		switch {
		case t.Rollback != nil:
			add("Rollback open")
		case t.Merged != nil && t.Merged.Rollback && t.Merged.Digest == t.Pinned && t.Proven != t.Pinned:
			add("Rolling back")
		}
		if release.StandingOf(l, nil, env, image, time.Time{}).Hold != nil {
			add("Held")
		}
	}
	if _, ok := l.Paused[env]; ok {
		add("Paused")
	}
	return out
}
