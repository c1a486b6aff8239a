package reconciler

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/internal/redact"
	"pinbot.dev/pinbot/reconciler/gitsource"
	"pinbot.dev/pinbot/reconciler/guard"
	"pinbot.dev/pinbot/reconciler/hook"
	"pinbot.dev/pinbot/render"
)

// load fetches the app's branch, renders it and places the objects (see
// guard.Place). On success the render is the pass's desired objects and
// is remembered for follow-up passes. A fetch failure is a *gitsource.Error,
// and dates the outage.
func (p *pass) load(ctx context.Context) error {
	if p.app.VerifyOnly() {
		return verifyOnlyError(p.app)
	}
	var desired []*unstructured.Unstructured
	auth, err := gitAuth(p.r.Config().Forge, p.r.token, p.app)
	if err == nil {
		err = p.r.source.Head(ctx, p.app.Repo, p.app.Branch, auth, func(rev gitsource.Revision) error {
			p.o.Commit = rev.Commit
			reads := newReadFS(rev.FS)
			objs, err := p.r.render(ctx, reads, p.app.Path, renderOptions(p.app)...)
			if err != nil {
				return err
			}
			p.st.setInputs(&inputs{repo: p.app.Repo, branch: p.app.Branch, auth: auth, read: reads.read()})
			objs = hook.Applicable(objs)
			if len(objs) == 0 && !p.app.SyncPolicy.AllowEmpty {
				return &render.Error{File: p.app.Path, Err: guard.ErrEmpty}
			}
			desired, err = guard.Place(p.app, objs, p.c.Applier.Scope)
			return err
		})
	} else {
		err = &gitsource.Error{Repo: redact.URL(p.app.Repo), Err: err}
	}
	var se *gitsource.Error
	if errors.As(err, &se) {
		if p.st.sourceDown.IsZero() {
			p.st.sourceDown = p.r.now()
		}
		return err
	}
	p.st.sourceDown = time.Time{}
	if err != nil {
		return err
	}
	p.st.commit, p.st.desired = p.o.Commit, desired
	p.desired = desired
	return nil
}
