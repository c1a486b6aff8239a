package release

import "time"

// Standing is where an image stands in an environment, as a person sees
// it on the release page and acts on it there: the hold on what the
// environment pins, how long what it proves has soaked, and the digest of
// the upstream a person may force in. The page and its actions ask it,
// never the ledger's holds and soaks.
type Standing struct {
	Track *Track // nil when the environment has seen nothing of the image
	// Hold is the hold on the digest the environment pins; nil for none.
	Hold *Hold
	// Soaked is how long the proven digest has soaked, of Soak; Soak is
	// 0 when the environment soaks nothing or proves nothing.
	Soaked, Soak time.Duration
	// Forcible is the digest the upstream pins, which a person may
	// force in: pinned here, or held here, it is "".
	Forcible, ForcibleTag string
	holds                 []Hold // the image's holds in the environment
}

// StandingOf is where image stands in env of chain at now. Without a
// chain (nil) it says the holds alone: no soak, nothing forcible.
func StandingOf(l *Ledger, chain Chain, env, image string, now time.Time) Standing {
	s := Standing{Track: l.Lookup(env, image)}
	for _, h := range l.Holds {
		if h.Env == env && h.Image == image {
			s.holds = append(s.holds, h)
		}
	}
	t := s.Track
	if t != nil {
		s.Hold = s.HoldOn(t.Pinned)
	}
	e, ok := chain.Get(env)
	if !ok {
		return s
	}
	if held, _ := t.Soaked(now, e.Soak); e.Soak > 0 && t != nil && t.ProvenSince != nil {
		s.Soaked, s.Soak = min(held, e.Soak), e.Soak
	}
	if up := l.Lookup(e.From, image); e.From != "" && up != nil && up.Pinned != "" && (t == nil || up.Pinned != t.Pinned) && s.HoldOn(up.Pinned) == nil {
		s.Forcible, s.ForcibleTag = up.Pinned, up.PinnedTag
	}
	return s
}

// Soaking reports whether the proven digest still soaks.
func (s Standing) Soaking() bool { return s.Soak > 0 && s.Soaked < s.Soak }

// HoldOn is the hold on digest of the image in the environment; nil for
// none.
func (s Standing) HoldOn(digest string) *Hold {
	for i := range s.holds {
		if s.holds[i].Digest == digest {
			return &s.holds[i]
		}
	}
	return nil
}

// RollbackCause says why the environment's open rollback was decided:
// its evidence while it is being opened, else what the merge's watch or
// the hold on the failed digest say; "" with no rollback open.
func (s Standing) RollbackCause() string {
	t := s.Track
	if t == nil || t.Rollback == nil {
		return ""
	}
	p := t.Rollback
	if p.Evidence != "" {
		return p.Evidence
	}
	if m := t.Merged; m != nil && m.Digest == p.Failed && m.Failure != "" {
		return m.Failure
	}
	if h := s.HoldOn(p.Failed); h != nil {
		return h.Reason
	}
	return ""
}
