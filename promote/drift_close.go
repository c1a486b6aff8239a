package promote

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/promote/pr"
)

// closeIfDrift closes an open pull request that drift opened (every image
// in its hidden block came from drift) once the base needs no change.
func closeIfDrift(open *pr.Meta) (bool, string) {
	if open == nil || !driftOnly(*open) {
		return false, ""
	}
	return true, "pinbot closes this pull request: every tag it followed points at the digest the base branch pins now, so it is obsolete."
}

func driftOnly(m pr.Meta) bool {
	for _, im := range m.Images {
		if im.Source != pr.SourceDrift {
			return false
		}
	}
	return len(m.Images) > 0
}

func sourcesOf(m pr.Meta) string {
	var out []string
	for _, im := range m.Images {
		if d := im.Source.Describe(); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return strings.Join(out, ", ")
}

// closeStale closes drift pull requests on branches this run planned no
// job for, whose tags all point at the pinned digests again (none held or
// failed this run).
func (s *session) closeStale(ctx context.Context, open map[string]*gitforge.Pull, planned map[string]bool, tracked []*tracking, dryRun bool, rep *DriftReport) []Result {
	unsettled := map[tagKey]bool{}
	for _, t := range tracked {
		if t.err != nil || len(t.moved) > 0 {
			unsettled[t.key] = true
		}
	}
	var out []Result
	branches := sortedKeys(open)
	for _, branch := range branches {
		pull := open[branch]
		if planned[branch] || !strings.HasPrefix(branch, s.cfg.BranchPrefix) {
			continue
		}
		m, err := pr.ParseBody(pull.Body)
		if err != nil || !driftOnly(m) {
			continue
		}
		stale := true
		for _, im := range m.Images {
			if unsettled[tagKey{im.Image, im.Tag}] {
				stale = false
			}
		}
		if !stale {
			continue
		}
		_, comment := closeIfDrift(&m)
		res := Result{Target: m.Target, Branch: branch, Status: StatusAlreadyPinned, Closed: pull, Meta: pr.Meta{Version: pr.MetaVersion, Target: m.Target}}
		if !dryRun {
			if err := s.env.Forge.ClosePull(ctx, s.env.Repo, pull.Number, comment); err != nil {
				rep.Failed = append(rep.Failed, Failure{Branch: branch, Err: fmt.Errorf("closing obsolete pull request #%d: %w", pull.Number, err)})
				continue
			}
		}
		out = append(out, res)
	}
	return out
}
