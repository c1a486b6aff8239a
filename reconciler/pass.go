package reconciler

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"pinbot.dev/pinbot/internal/commitstatus"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/reconciler/cluster"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/diff"
	"pinbot.dev/pinbot/reconciler/gitsource"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/metrics"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/record"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// mode says what a pass may do besides computing the status.
type mode int

const (
	// modeObserve computes only: pinbot status and pinbot verify.
	modeObserve mode = iota
	// modeLoop is the loop's pass: it applies a new commit when the app is
	// automated, heals when it self-heals, records and reports.
	modeLoop
	// modeSync is pinbot sync: apply the current commit now, record, report.
	modeSync
	// modeFollow recomputes health and verification from the last render
	// without fetching Git: the app's Pods changed during a rollout.
	modeFollow
	// modeReport is pinbot verify --report of a verify-only app: compute,
	// record and report, apply nothing.
	modeReport
)

func (m mode) records() bool { return m != modeObserve }

// freshReads reports whether the pass reads the deployer's objects from
// the API server: a command's pass, and a loop pass someone asked for
// (Trigger); the loop's other passes read them from the watch.
func (p *pass) freshReads() bool {
	switch p.mode {
	case modeLoop:
		return p.st.fresh.Swap(false)
	case modeFollow:
		return false
	}
	return true
}

// begin reads the app's record for the pass: the loop's passes, which
// this process alone makes, from the copy it keeps (record.BeginCached);
// the commands' passes afresh.
func (p *pass) begin(ctx context.Context) (*record.Txn, error) {
	var t *record.Txn
	var err error
	if p.mode == modeLoop || p.mode == modeFollow {
		t, err = p.r.history.BeginCached(ctx, p.app.Name)
	} else {
		t, err = p.r.history.Begin(ctx, p.app.Name)
	}
	if err == nil && t.Current().Status != nil {
		p.stored = metrics.StateOf(*t.Current().Status, nil)
		p.r.trustStoredProof(p.app.Name, t.Current().Status)
	}
	return t, err
}

func (m mode) trigger() string {
	if m == modeSync {
		return history.TriggerManual
	}
	return history.TriggerAuto
}

// pass is one reconciliation of one app, built once (Reconciler.pass) and
// handed down as one value, as gitops-engine hands down its syncContext:
// the app and its state, what the pass may do (mode, prune), what it read
// (Git's desired objects, the cluster's live ones, the app's record) and
// what it found out (o), which status.Of turns into the app's status.
// The pass holds st.passMu throughout.
type pass struct {
	r    *Reconciler
	app  *config.App
	st   *appState
	mode mode
	// prune is `pinbot sync --prune`: prune though the policy has it off.
	prune bool
	log   *slog.Logger

	o       status.Observation
	txn     *record.Txn
	desired []*unstructured.Unstructured
	live    map[object.Ref]*unstructured.Unstructured
	// synced says this pass applied the commit.
	synced bool
	// tracked is a verify-only app as its deployer's object names it (the
	// repository and branch it follows), nil for pinbot's own apps.
	tracked *config.App
	// stored is the proof's state the app's record held when the pass
	// began ("" for none).
	stored verdict.Verdict
	// snap is what the pass verified; remote says it was in a spoke,
	// whose workloads pinbot writes no Events on.
	snap   *verdict.Snapshot
	remote bool
	// c is the cluster the pass applies to and reads (reach): the app's
	// cluster:, else pinbot's own.
	c *cluster.Cluster
	// fresh says a verify-only app's pass reads the objects it would read
	// from watches afresh (freshReads).
	fresh bool
}

// pass runs one pass of app in mode m (with sync options, for modeSync)
// and remembers its status for the metrics and the dashboard.
func (r *Reconciler) pass(ctx context.Context, app *config.App, st *appState, m mode, so *syncOptions) (*status.App, *verdict.Verification, error) {
	st.passMu.Lock()
	defer st.passMu.Unlock()
	start := time.Now()
	defer func() { r.metrics.ObservePass(app.Name, time.Since(start)) }()
	p := r.newPass(ctx, app, st, m, so)
	var s *status.App
	var v *verdict.Verification
	var err error
	if app.VerifyOnly() {
		s, v, err = r.observer.pass(ctx, p)
	} else {
		s, v, err = p.run(ctx)
	}
	prev := st.verdict()
	if prev == "" {
		// This process's first pass of the app: the proof stored by the
		// last process that passed it (a replica since gone, or this one
		// before a restart) is what changed or not, so that a restart or
		// a shard moving does not announce every app again.
		prev = p.stored
	}
	if st.remember(s, v) {
		if f := r.onProof.Load(); f != nil {
			(*f)(app.Name)
		}
		p.announce(ctx, prev, v)
	}
	return s, v, err
}

// OnProofChange calls f with an app's name after each pass whose sync,
// health or containers' verdicts differ from the pass before; serve's
// release chains step then. f must not block.
func (r *Reconciler) OnProofChange(f func(app string)) { r.onProof.Store(&f) }

// newPass builds the pass value of one pass of app. The caller holds
// st.passMu until the pass ends.
func (r *Reconciler) newPass(ctx context.Context, app *config.App, st *appState, m mode, so *syncOptions) *pass {
	p := &pass{r: r, app: app, st: st, mode: m, log: logctx.From(ctx).With("app", app.Name), c: r.local}
	p.o = status.Observation{App: app, At: r.now(), Replica: r.replica}
	if so != nil {
		p.prune = so.prune
	}
	return p
}

// run is one reconciliation of one of pinbot's own apps: fetch and render
// Git (except when following a rollout), compare with the cluster, apply
// when mode and policy say so, heal, then compute health and
// verification, and (except when observing) record and report. The error
// says why the pass stopped early; the status says it too.
func (p *pass) run(ctx context.Context) (*status.App, *verdict.Verification, error) {
	if err := p.reach(ctx); err != nil {
		return p.clusterFault("reaching the cluster", err)
	}
	if p.mode != modeFollow || p.st.desired == nil {
		if err := p.load(ctx); err != nil {
			return p.stopped(ctx, err)
		}
	} else {
		p.o.Commit, p.desired = p.st.commit, p.st.desired
	}
	var err error
	if p.live, err = p.c.Live(ctx, p.app.Name, p.app.AllowNamespaces, p.desired); err != nil {
		return p.clusterFault("reading the cluster", err)
	}
	// The pass reads the app's record once and writes it once, at its
	// end, whatever it synced, healed or settled.
	if p.txn, err = p.begin(ctx); err != nil {
		if p.mode.records() {
			return p.clusterFault("", err)
		}
		p.log.Debug("no history", "error", err)
		p.txn = p.r.history.Empty(p.app.Name)
	}
	p.st.clusterDown = time.Time{} // the API answers
	v, err := p.reconcile(ctx)
	if p.mode.records() {
		rctx, cancel := recordContext(ctx)
		defer cancel()
		if cerr := p.txn.Commit(rctx); cerr != nil && err == nil {
			err = cerr
		} else if cerr != nil {
			p.log.Warn("recording the pass", "error", cerr)
		}
	}
	return status.Of(p.o), v, err
}

// reconcile is the part of a pass after Git and the cluster were read:
// sync, compare, diff and heal, verify, and settle. It notes what it finds
// in p.o, and changes the app's record in p.txn only; run writes it.
func (p *pass) reconcile(ctx context.Context) (*verdict.Verification, error) {
	if p.shouldApply() {
		if err := p.sync(ctx); err != nil {
			p.o.Err = err
			p.txn.SetStatus(status.Of(p.o))
			return nil, err
		}
	}
	if err := p.compare(); err != nil {
		p.o.Err = err
		return nil, err
	}
	derr := p.inspect(ctx)
	if derr != nil && cluster.Transient(derr) {
		_, _, err := p.clusterFault("diffing", derr)
		return nil, err
	}
	p.o.Err = derr
	p.o.SyncedCommit = syncedCommit(p.txn.Current())

	v, h, err := p.observe(ctx)
	if err != nil {
		p.o.Err = err
		return nil, err
	}
	p.o.Health, p.o.War, p.o.Verification = &h, p.st.guard.War(), v
	if p.mode.records() {
		p.conclude(ctx, v, h)
	}
	return v, derr
}

// compare notes in p.o whether the cluster holds what the commit declares
// (diff.Compare).
func (p *pass) compare() error {
	out, err := diff.Compare(p.app.Name, p.desired, p.live)
	if err != nil {
		return err
	}
	p.o.Compared, p.o.Sync, p.o.OutOfSync = true, status.Synced, out
	if len(out) > 0 {
		p.o.Sync = status.OutOfSync
	}
	return nil
}

// stopped finishes a pass that could not render: it says why in the status
// and, for a refused commit the loop or a person tried to sync, records the
// refusal and reports it on the commit.
func (p *pass) stopped(ctx context.Context, err error) (*status.App, *verdict.Verification, error) {
	p.o.Err = err
	var se *gitsource.Error
	if errors.As(err, &se) {
		p.o.SourceDown = p.st.sourceDown
		p.frozenDrift(ctx)
		s := status.Of(p.o)
		if p.mode.records() {
			p.r.persist(ctx, p.app.Name, s)
		}
		return s, nil, err
	}
	if cluster.Transient(err) {
		return p.clusterFault("", err)
	}
	if !p.mode.records() {
		return status.Of(p.o), nil, err
	}
	txn, herr := p.begin(ctx)
	if herr != nil {
		return status.Of(p.o), nil, err
	}
	p.txn = txn
	p.o.SyncedCommit = syncedCommit(txn.Current())
	s := status.Of(p.o)
	if p.mode == modeSync || p.shouldApply() {
		e := history.Entry{Commit: p.o.Commit, Time: p.r.now(), Trigger: p.mode.trigger(), Result: history.Refused, Reason: s.Error, Final: true}
		if l := txn.Current().Latest(); l != nil && l.Commit == e.Commit && l.Result == history.Refused && l.Reason == e.Reason {
			e = *l // already recorded and reported
		} else {
			p.post(ctx, &e, commitstatus.Failure, "refused: "+s.Error, "the refusal")
		}
		txn.Add(e)
	}
	txn.SetStatus(s)
	if cerr := txn.Commit(ctx); cerr != nil {
		return s, nil, errors.Join(err, cerr)
	}
	return s, nil, err
}

// shouldApply decides whether this pass applies its commit: pinbot sync
// always does; the loop does for an automated app when the commit has no
// sync yet or its last sync failed. Drift on a synced commit is healed
// object by object instead (see mayHeal and inspect).
func (p *pass) shouldApply() bool {
	switch {
	case p.mode == modeSync:
		return true
	case p.mode != modeLoop || !p.app.SyncPolicy.Automated:
		return false
	}
	rec := p.txn.Current()
	l := rec.Latest()
	switch {
	case l == nil || l.Result == history.Failed:
		return true
	case l.Commit == p.o.Commit:
		return false
	}
	// A new head: applied unless it renders the very objects the last
	// sync applied (a commit elsewhere in a repository of many apps),
	// as Argo CD syncs a new revision only when it changes the app.
	for _, e := range rec.Entries {
		if e.Result == history.Applied && e.Trigger != history.TriggerHeal {
			return e.Desired == "" || e.Desired != desiredDigest(p.desired)
		}
	}
	return true
}

// desiredDigest digests objs by each one's reference and config hash
// ("" when one cannot be hashed: never the same as a sync's).
func desiredDigest(objs []*unstructured.Unstructured) string {
	lines := make([]string, 0, len(objs))
	for _, o := range objs {
		h, err := object.ConfigHash(o)
		if err != nil {
			return ""
		}
		lines = append(lines, object.RefOf(o).String()+"="+h)
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:16])
}

// syncedCommit is the commit of the newest sync that applied everything.
func syncedCommit(rec *history.Record) string {
	for _, e := range rec.Entries {
		if e.Result == history.Applied {
			return e.Commit
		}
	}
	return ""
}

// clusterFault stops a pass on a Kubernetes API error in stage (or "" when
// err names it). A transient one (the API unreachable, overloaded or
// timing out) is dated: the status says since when, and the loop backs off
// and retries.
func (p *pass) clusterFault(stage string, err error) (*status.App, *verdict.Verification, error) {
	err = p.c.Fault(err) // names another cluster
	p.o.Err, p.o.Stage = err, stage
	if cluster.Transient(err) {
		if p.st.clusterDown.IsZero() {
			p.st.clusterDown = p.r.now()
		}
		p.o.ClusterDown = p.st.clusterDown
	}
	return status.Of(p.o), nil, err
}

// reach picks the cluster the pass applies to and reads: the one the
// app's cluster: kubeconfig Secret (in the state namespace) reaches, else
// pinbot's own; and makes sure its API server still answers, so that
// its caches are not stale. pinbot writes no Events on another cluster's
// workloads.
func (p *pass) reach(ctx context.Context) error {
	if p.app.Cluster == nil {
		p.c = p.r.local
		p.on(p.c)
		return p.c.Answers(ctx)
	}
	ref := p.app.Cluster.KubeConfig.SecretRef
	c, err := p.r.remotes.Flux(ctx, &deployer.SecretKey{Namespace: p.r.Config().StateNamespace, Name: ref.Name, Key: ref.Key})
	if err != nil {
		return err
	}
	p.c, p.remote = c, true
	p.on(c)
	return c.Answers(ctx)
}

// on notes that the pass reads c: its status names the cluster, and a
// change in c's reachability wakes the app (Reconciler.reachability).
func (p *pass) on(c *cluster.Cluster) {
	p.o.Cluster, p.o.ClusterLabels = c.Name, c.Labels
	if p.st.cluster.Load() != c {
		p.st.cluster.Store(c)
	}
}
