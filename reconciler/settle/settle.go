// Package settle decides what a verification means for the history entry
// awaiting it and for the commit status on Git: verified, still rolling
// out, Degraded, or failed for good once the app's verifyTimeout passed.
// Each state is posted once. Pure.
package settle

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// Outcome is what one verification means for the entry awaiting it.
type Outcome struct {
	Entry   history.Entry      // the updated entry
	State   commitstatus.State // commit status to post, "" for none
	Desc    string             // its description
	Comment bool               // comment the verification on the promotion pull request
}

// Sync decides what verification v and health h mean for entry e, a sync
// awaiting its verification, at now:
//   - verified and Healthy (the rollout finished): the entry is final, the
//     commit status success with the summary ("3/3 Pods run sha256:abcd…"),
//     and the pull request gets a comment;
//   - Degraded: the commit status turns failure with the reason, but the
//     entry stays open, since a Pod may yet pull its image;
//   - past timeout since the sync: final, failure, and a comment;
//   - otherwise the entry waits (its status stays pending).
//
// A status is posted only when its state differs from the last one posted.
func Sync(e history.Entry, v *verdict.Verification, h verdict.HealthReport, now time.Time, timeout time.Duration) Outcome {
	e.Health = h.Health
	e.Summary = v.Summary()
	s := Outcome{}
	switch {
	case v.Verified && h.Health == verdict.Healthy:
		e.Verified, e.Final = true, true
		t := now
		e.VerifiedAt = &t
		e.Digests = DigestCounts(v)
		s.State, s.Desc = commitstatus.Success, e.Summary
		s.Comment = !e.Commented
	case now.Sub(e.Time) > timeout:
		e.Final = true
		s.State, s.Desc = commitstatus.Failure, fmt.Sprintf("not verified %s after the sync: %s", timeout, failureReason(v, h))
		s.Comment = !e.Commented
	case h.Health == verdict.Degraded:
		s.State, s.Desc = commitstatus.Failure, "Degraded: "+h.Reason
	default:
		s.State, s.Desc = commitstatus.Pending, "rolling out: "+e.Summary
	}
	if s.State == e.Reported {
		s.State, s.Desc = "", ""
	}
	s.Entry = e
	return s
}

// Superseded settles e, a sync still awaiting its verification, as
// replaced by the commit by before it was verified. One last seen failing
// to roll out (a release rolled back, say) says it never verified, and
// what was seen: it was not merely followed by a newer one.
func Superseded(e history.Entry, by string) history.Entry {
	summary := "superseded by " + by + " before it was verified"
	if e.Summary != "" && e.Health != verdict.Healthy {
		summary = "never verified, replaced by " + by + "; last seen " + string(e.Health) + ": " + e.Summary
	}
	e.Final, e.Summary = true, summary
	return e
}

func failureReason(v *verdict.Verification, h verdict.HealthReport) string {
	if h.Health == verdict.Degraded || h.Health == verdict.Progressing && len(v.Containers) == 0 {
		return string(h.Health) + ": " + h.Reason
	}
	return v.Summary()
}

// DigestCounts lists the verified Git digests and how many Pods run each.
func DigestCounts(v *verdict.Verification) []history.DigestCount {
	pods := map[string]map[string]bool{}
	for _, c := range v.Containers {
		if c.Verdict != verdict.Verified {
			continue
		}
		if pods[c.GitDigest] == nil {
			pods[c.GitDigest] = map[string]bool{}
		}
		pods[c.GitDigest][c.Namespace+"/"+c.Pod] = true
	}
	var out []history.DigestCount
	for d, p := range pods {
		out = append(out, history.DigestCount{Digest: d, Pods: len(p)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Digest < out[j].Digest })
	return out
}

// Observed decides what a verify-only app's verification v means for e,
// the entry of its head commit, at now: success with the
// summary when verified (and, once, the comment on the promotion pull
// request); failure when a container runs neither the head's nor the
// deployed revision's digest; else pending (the deployer is behind, or
// Pods are starting). A state already posted is not posted again, and a
// head once verified is not set back to pending by a Pod restarting.
func Observed(e history.Entry, v *verdict.Verification, now time.Time) Outcome {
	e.Summary = v.Summary()
	s := Outcome{}
	mismatch := slices.ContainsFunc(v.Containers, func(c verdict.ContainerVerdict) bool { return c.Verdict == verdict.Mismatch })
	switch {
	case v.Verified:
		if !e.Verified {
			t := now
			e.VerifiedAt = &t
		}
		e.Verified, e.Digests = true, DigestCounts(v)
		s.State, s.Desc = commitstatus.Success, e.Summary
		s.Comment = !e.Commented
	case mismatch:
		e.Verified = false
		s.State, s.Desc = commitstatus.Failure, e.Summary
	default:
		s.State, s.Desc = commitstatus.Pending, e.Summary
		if e.Reported == commitstatus.Success {
			s.State, s.Desc = "", ""
		}
	}
	if s.State == e.Reported {
		s.State, s.Desc = "", ""
	}
	s.Entry = e
	return s
}
