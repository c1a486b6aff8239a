package promote

import (
	"context"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/pins"
)

// session is the base branch of one run, read from Git's objects, and
// reused by every job of the run.
type session struct {
	env  *Env
	base string
	repo *gitforge.Repository
	// snap is the base head the jobs start from; a job's rewrite becomes
	// a commit on top of it.
	snap *gitforge.Snapshot
	cfg  Config
	pins []pins.Pin
	// scanned is the base commit pins was read from.
	scanned string
	// tagRefs: pins also lists the references by tag alone (a pull
	// request's head, which a gate judges whole).
	tagRefs bool
	chooser *chooser
	// tags resolves drift's tracked tags (see resolver).
	tags *resolver
}

// open fetches the head of the base branch (the repository's default
// branch, named by the same round trip, when Env.Base is "") and reads
// its .pinbot.yaml and pins.
func open(ctx context.Context, env *Env) (*session, error) { return openFrom(ctx, env, nil, false) }

// openFrom is open, keeping the config and pins prior read from the
// cached head when the fetched head is that commit; with tagRefs, the
// pins list the references by tag alone too (pins.WithTagReferences).
func openFrom(ctx context.Context, env *Env, prior *session, tagRefs bool) (*session, error) {
	cache, err := env.gitCache(ctx)
	if err != nil {
		return nil, err
	}
	s := &session{env: env, base: env.Base, tagRefs: tagRefs, chooser: newChooser(env.Registry)}
	if s.repo, err = cache.Repository(env.CloneURL); err != nil {
		return nil, err
	}
	if err := s.fetch(ctx); err != nil {
		return nil, err
	}
	if prior != nil && prior.scanned == s.snap.Commit() && prior.tagRefs == tagRefs {
		s.cfg, s.pins, s.scanned = prior.cfg, prior.pins, prior.scanned
	} else {
		if s.cfg, err = LoadConfig(s.snap.FS()); err != nil {
			return nil, err
		}
		if err := s.scan(ctx); err != nil {
			return nil, err
		}
	}
	env.reached(phaseFetched)
	return s, nil
}

// took logs at debug level how long a step took.
func took(ctx context.Context, step string, since time.Time, args ...any) {
	logctx.From(ctx).Debug(step, append(args, "took", time.Since(since).Round(time.Millisecond).String())...)
}

// hasPins reports whether the base has pins of image in target ("" for
// any target).
func (s *session) hasPins(image, target string) bool {
	for _, p := range s.pins {
		if p.Image != image || p.Ignored {
			continue
		}
		if t := s.cfg.TargetOf(p.File); t != "" && (target == "" || t == target) {
			return true
		}
	}
	return false
}
