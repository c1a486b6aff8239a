package reconciler

import (
	"context"
	"errors"
	"maps"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/reconciler/diff"
	"pinbot.dev/pinbot/reconciler/object"
)

// inspect notes the app's drift and orphans in p.o, and heals when
// mayHeal says so. A pass that just synced has no drift (it applied Git);
// a follow-up pass (no Git fetch) reports the last pass's findings. After
// a heal, p.live holds the healed objects and p.o the comparison after
// the heal; the heal is recorded in p.txn.
func (p *pass) inspect(ctx context.Context) error {
	if p.mode == modeFollow {
		p.o.Drift, p.o.Orphans = p.st.lastDrift, p.st.lastOrphans
		return nil
	}
	var fields []diff.Field
	var err error
	if !p.synced {
		fields, err = p.fieldDiffs(ctx, p.desired, p.live)
	}
	orphans, oerr := p.orphans(ctx)
	err = errors.Join(err, oerr)
	if err == nil && (len(fields) > 0 || len(p.o.OutOfSync) > 0) && p.mayHeal() {
		healed, herr := p.heal(ctx, fields)
		if len(healed) > 0 {
			p.live, fields = withHealed(p.live, fields, healed)
			herr = errors.Join(herr, p.compare())
		}
		err = herr
	}
	p.st.lastDrift, p.st.lastOrphans = fields, orphans
	p.o.Drift, p.o.Orphans = fields, orphans
	return err
}

// withHealed returns live with the healed objects replaced, and fields
// without theirs.
func withHealed(live map[object.Ref]*unstructured.Unstructured, fields []diff.Field, healed map[object.Ref]*unstructured.Unstructured) (map[object.Ref]*unstructured.Unstructured, []diff.Field) {
	out := maps.Clone(live)
	maps.Copy(out, healed)
	var left []diff.Field
	for _, d := range fields {
		if healed[d.Object] == nil {
			left = append(left, d)
		}
	}
	return out, left
}

// frozenDrift notes in p.o, a pass stopped because the source is
// unreachable, the drift from the last commit fetched. It only reads and
// dry-runs: pinbot applies, heals and prunes nothing on state it cannot
// verify, but a person should still see that the cluster moved.
func (p *pass) frozenDrift(ctx context.Context) {
	if p.st.desired == nil {
		return
	}
	live, err := p.c.Live(ctx, p.app.Name, p.app.AllowNamespaces, p.st.desired)
	var fields []diff.Field
	if err == nil {
		fields, err = p.fieldDiffs(ctx, p.st.desired, live)
	}
	if err != nil {
		p.log.Debug("diffing the last commit while the source is unreachable", "error", err)
		return
	}
	p.o.Drift, p.o.Commit = fields, p.st.commit
}
