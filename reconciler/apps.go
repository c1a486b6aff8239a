package reconciler

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"time"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/internal/logctx"
	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/internal/wakes"
)

// appSet is the config and each app's state, replaced whole (SetApps):
// readers take one snapshot and see a config and states that agree.
type appSet struct {
	cfg    *config.Config
	apps   map[string]*config.App // cfg's apps by name
	states map[string]*appState
	// byDeployer are the verify-only apps by their deployer's object
	// (deployerKey), and wakes the apps by namespace: what the clusters'
	// callbacks wake, without looking at every app.
	byDeployer map[string][]*appState
	wakes      *wakes.Index
	// repoKeys are the gitforge.RepoKey of each of cfg's apps' Repo, in
	// cfg's order: what a push webhook is matched against (Following).
	repoKeys []string
}

func newAppSet(cfg *config.Config, old *appSet) *appSet {
	s := &appSet{cfg: cfg, apps: make(map[string]*config.App, len(cfg.Apps)), states: make(map[string]*appState, len(cfg.Apps)),
		byDeployer: map[string][]*appState{}, wakes: wakes.New(), repoKeys: make([]string, len(cfg.Apps))}
	if old != nil {
		s.wakes = old.wakes // the namespaces the passes found go on
	}
	for i := range cfg.Apps {
		a := &cfg.Apps[i]
		s.apps[a.Name] = a
		s.repoKeys[i] = gitforge.RepoKey(a.Repo)
		st := old.keep(a)
		if st == nil {
			st = newAppState()
		}
		s.states[a.Name] = st
		if res, ns, name, ok := a.DeployerObject(); ok {
			k := deployerKey(res, ns, name)
			s.byDeployer[k] = append(s.byDeployer[k], st)
		}
		s.wakes.Add(a.Name, a.AllowNamespaces...)
	}
	return s
}

// keep is the state of a when s declares it alike: its caches and its
// loop go on. nil when s is nil or a is new or changed.
func (s *appSet) keep(a *config.App) *appState {
	if s == nil || s.states[a.Name] == nil {
		return nil
	}
	if was := s.apps[a.Name]; was == nil || !reflect.DeepEqual(was, a) {
		return nil
	}
	return s.states[a.Name]
}

// ShardKey is app's config.App.ShardKey, or its name when it is not one
// of the apps: what serve's replicas share the apps out by.
func (r *Reconciler) ShardKey(app string) string {
	if a := r.set.Load().apps[app]; a != nil {
		return a.ShardKey()
	}
	return app
}

// Config returns the Reconciler's configuration: the one it was made
// with, its apps as SetApps last set them.
func (r *Reconciler) Config() *config.Config { return r.set.Load().cfg }

// states are the apps' states, as of now.
func (r *Reconciler) states() map[string]*appState { return r.set.Load().states }

func (r *Reconciler) app(name string) (*config.App, *appState, error) {
	s := r.set.Load()
	a := s.apps[name]
	if a == nil {
		_, err := s.cfg.App(name) // says which apps there are
		return nil, nil, err
	}
	return a, s.states[name], nil
}

// SetApps replaces the config's apps with apps, as a change of what
// discover: selects is applied: the loops of the apps no longer there
// stop (after their pass under way), those of new apps start in every
// RunSome that keeps them, and an app whose definition changed restarts;
// every other app's loop runs on undisturbed, its caches and its state
// kept. The apps must be valid, as config.Config.WithDiscovered makes
// them.
func (r *Reconciler) SetApps(apps []config.App) (added, removed []string) {
	r.setMu.Lock()
	defer r.setMu.Unlock()
	old := r.set.Load()
	cfg := *old.cfg
	cfg.Apps = apps
	next := newAppSet(&cfg, old)
	for name, st := range old.states {
		if next.states[name] != st {
			removed = append(removed, name)
		}
	}
	for name, st := range next.states {
		if old.states[name] != st {
			added = append(added, name)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	r.set.Store(next)
	r.runs.changed(removed)
	return added, removed
}

// runs are the RunSome under way, told when the apps change.
type runs struct {
	mu  sync.Mutex
	all map[*appRuns]bool
}

func (rs *runs) add(a *appRuns) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.all == nil {
		rs.all = map[*appRuns]bool{}
	}
	rs.all[a] = true
}

func (rs *runs) remove(a *appRuns) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.all, a)
}

func (rs *runs) changed(removed []string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for a := range rs.all {
		for _, name := range removed {
			a.end(name)
		}
		a.startAll()
	}
}

// appRuns are the app loops of one RunSome: one goroutine per app it
// keeps, each with a stop of its own, closed when the app goes or the
// RunSome ends (endAll).
type appRuns struct {
	r    *Reconciler
	ctx  context.Context
	keep func(*config.App) bool

	mu      sync.Mutex
	running map[string]*appRun
	ended   bool // endAll: start nothing more
	wg      sync.WaitGroup
}

type appRun struct {
	st   *appState
	quit chan struct{}
}

// startAll starts the loop of each app that keep keeps and that has
// none. It reads the apps under its lock, so that a SetApps meanwhile
// (which ends the loops of apps gone under the same lock) is either
// seen here or ends what this starts.
func (a *appRuns) startAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.r.set.Load()
	for i := range s.cfg.Apps {
		app := &s.cfg.Apps[i]
		st := s.states[app.Name]
		if a.ended || (a.keep != nil && !a.keep(app)) || a.running[app.Name] != nil {
			continue
		}
		run := &appRun{st: st, quit: make(chan struct{})}
		a.running[app.Name] = run
		st.ownedSince.Store(time.Now().UnixNano())
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.r.runApp(a.ctx, run.quit, app, st)
			st.ownedSince.Store(0)
			if a.keep != nil {
				st.forget()
				a.r.history.Forget(app.Name)
				a.r.local.Pods.Forget(app.Name)
				a.r.remotes.Forget(app.Name)
			}
		}()
	}
}

// end stops app's loop, after its pass under way.
func (a *appRuns) end(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if run := a.running[name]; run != nil {
		close(run.quit)
		delete(a.running, name)
		logctx.From(a.ctx).Info("the app is gone from the config; its loop stops", "app", name)
	}
}

// endAll stops every loop, after its pass under way: the RunSome ends.
// One close per loop, and no goroutine per loop to wait for the end.
func (a *appRuns) endAll() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ended = true
	for name, run := range a.running {
		close(run.quit)
		delete(a.running, name)
	}
}
