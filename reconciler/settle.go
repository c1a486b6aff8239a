package reconciler

import (
	"fmt"
	"sort"
	"time"
)

// settlement is what one verification means for the sync awaiting it.
type settlement struct {
	entry   Entry  // the updated entry
	state   string // commit status to post, "" for none
	desc    string // its description
	comment bool   // comment the verification on the promotion pull request
}

// settle decides, purely, what verification v and health h mean for entry
// e, a sync awaiting its verification, at now:
//   - verified and Healthy (the rollout finished): the entry is final, the
//     commit status success with the summary ("3/3 Pods run sha256:abcd…"),
//     and the pull request gets a comment;
//   - Degraded: the commit status turns failure with the reason, but the
//     entry stays open, since a Pod may yet pull its image;
//   - past timeout since the sync: final, failure, and a comment;
//   - otherwise the entry waits (its status stays pending).
//
// A status is posted only when its state differs from the last one posted.
func settle(e Entry, v *Verification, h HealthReport, now time.Time, timeout time.Duration) settlement {
	e.Health = h.Health
	e.Summary = v.Summary()
	s := settlement{}
	switch {
	case v.Verified && h.Health == Healthy:
		e.Verified, e.Final = true, true
		t := now
		e.VerifiedAt = &t
		e.Digests = digestCounts(v)
		s.state, s.desc = stateSuccess, e.Summary
		s.comment = !e.Commented
	case now.Sub(e.Time) > timeout:
		e.Final = true
		s.state, s.desc = stateFailure, fmt.Sprintf("not verified %s after the sync: %s", timeout, failureReason(v, h))
		s.comment = !e.Commented
	case h.Health == Degraded:
		s.state, s.desc = stateFailure, "Degraded: "+h.Reason
	default:
		s.state, s.desc = statePending, "rolling out: "+e.Summary
	}
	if s.state == e.Reported {
		s.state, s.desc = "", ""
	}
	s.entry = e
	return s
}

func failureReason(v *Verification, h HealthReport) string {
	if h.Health == Degraded || h.Health == Progressing && len(v.Containers) == 0 {
		return string(h.Health) + ": " + h.Reason
	}
	return v.Summary()
}

// digestCounts lists the verified Git digests and how many Pods run each.
func digestCounts(v *Verification) []DigestCount {
	pods := map[string]map[string]bool{}
	for _, c := range v.Containers {
		if c.Verdict != Verified {
			continue
		}
		if pods[c.GitDigest] == nil {
			pods[c.GitDigest] = map[string]bool{}
		}
		pods[c.GitDigest][c.Namespace+"/"+c.Pod] = true
	}
	var out []DigestCount
	for d, p := range pods {
		out = append(out, DigestCount{Digest: d, Pods: len(p)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Digest < out[j].Digest })
	return out
}
