package release

import "time"

// Tally is DORA's four keys for one environment, counted from proof as
// the ledger records it: every replica's release page reads the same.
type Tally struct {
	// Since is when the ledger started counting.
	Since time.Time `json:"since"`
	// Deployments are merged digests proven running here (the deployment
	// frequency), and Lead the sum of their merge-to-proof times.
	Deployments int           `json:"deployments"`
	Lead        time.Duration `json:"lead"`
	// Failures are deployments pinbot held and rolled back, or reported
	// failing after the rollback window (a person's hold is none).
	Failures int `json:"failures"`
	// Restores are failures whose rollback was proven running, and
	// Restore the sum of their failure-to-proof times.
	Restores int           `json:"restores"`
	Restore  time.Duration `json:"restore"`
}

// Deployment is what proving digest of image in env at at counts for
// DORA: whether it is a deployment (a merged digest proven), its
// merge-to-proof time, and the failure it restores, if any: the newest
// hold pinbot placed there whose rollback goes to digest, placed before
// at.
func (l *Ledger) Deployment(env, image, digest string, at time.Time) (deployed bool, lead time.Duration, restored *Hold) {
	t := l.Lookup(env, image)
	if t == nil || t.Merged == nil || t.Merged.Digest != digest {
		return false, 0, nil
	}
	for i := range l.Holds {
		h := &l.Holds[i]
		if h.Env == env && h.From == env && h.Image == image && h.RolledBackTo == digest && h.Since.Before(at) && (restored == nil || h.Since.After(restored.Since)) {
			restored = h
		}
	}
	return true, max(at.Sub(t.Merged.At), 0), restored
}

// Failed says whether event e is a failed deployment: pinbot's hold of
// a failed digest, or its report of a failure after the window.
func Failed(e Event) bool {
	return (e.Reason == ReasonHeld || e.Reason == ReasonReported) && e.By == ""
}

// tally counts event e, just recorded, in its environment's Tally.
func (l *Ledger) tally(e Event) {
	if e.Env == "" {
		return
	}
	t := l.DORA[e.Env]
	if t == nil {
		t = &Tally{Since: e.At}
	}
	switch {
	case e.Reason == ReasonProven:
		tr := l.Lookup(e.Env, e.Image)
		if tr == nil {
			return
		}
		deployed, lead, h := l.Deployment(e.Env, e.Image, tr.Proven, e.At)
		if !deployed {
			return
		}
		t.Deployments++
		t.Lead += lead
		if h != nil {
			t.Restores++
			t.Restore += max(e.At.Sub(h.Since), 0)
		}
	case Failed(e):
		t.Failures++
	default:
		return
	}
	if l.DORA == nil {
		l.DORA = map[string]*Tally{}
	}
	l.DORA[e.Env] = t
}
