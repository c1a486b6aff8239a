package shard

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"pinbot.dev/pinbot/internal/testenv/kube"
	"pinbot.dev/pinbot/internal/testenv/poll"
)

var cluster *kube.Cluster

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	flag.Parse()
	if !testing.Short() {
		c, err := kube.Start(context.Background(), kube.Options{Controllers: []string{"serviceaccount", "serviceaccount-token"}})
		if err != nil {
			fmt.Fprintf(os.Stderr, "starting the control plane: %s\n", err.Error())
			return 1
		}
		cluster = c
		defer c.Stop()
	}
	return m.Run()
}

// The timings of the tests: short, so a handover takes seconds.
const (
	leaseDuration = 3 * time.Second
	renewDeadline = 2 * time.Second
	retryPeriod   = 250 * time.Millisecond
)

// ledger records which replica runs the Work of which shard, and fails
// the test when two run the same shard at once.
type ledger struct {
	t       *testing.T
	mu      sync.Mutex
	running map[int]string
	starts  map[int]int
}

func (l *ledger) work(id string) Work {
	return func(ctx context.Context, stop <-chan struct{}, k int) {
		l.mu.Lock()
		if other, ok := l.running[k]; ok {
			l.t.Errorf("shard %d: %s starts passing it while %s still does", k, id, other)
		}
		l.running[k] = id
		l.starts[k]++
		l.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-stop:
			// The pass in flight ends before the shard goes.
			time.Sleep(100 * time.Millisecond)
		}
		l.mu.Lock()
		delete(l.running, k)
		l.mu.Unlock()
	}
}

func (l *ledger) owners() map[int]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[int]string{}
	for k, id := range l.running {
		out[k] = id
	}
	return out
}

// replica is one Manager, whose API requests fail once cut: a replica
// that died or lost the network, as the other replicas see it.
type replica struct {
	id     string
	m      *Manager
	cut    atomic.Bool
	lists  atomic.Int64 // LISTs of the Leases
	renews atomic.Int64 // writes of its member Lease: one per retry period
	stop   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

var errCut = errors.New("the replica is cut off")

type cutTransport struct {
	r    *replica
	next http.RoundTripper
}

func (c cutTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if c.r.cut.Load() {
		return nil, errCut
	}
	if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/leases") && req.URL.Query().Get("watch") == "" {
		c.r.lists.Add(1)
	}
	if (req.Method == http.MethodPut || req.Method == http.MethodPatch) && strings.HasSuffix(req.URL.Path, "/leases/"+memberName(c.r.id)) {
		c.r.renews.Add(1)
	}
	return c.next.RoundTrip(req)
}

func startReplica(t *testing.T, ns, id string, shards int, l *ledger) *replica {
	t.Helper()
	return startReplicaEvery(t, ns, id, shards, l, retryPeriod)
}

// startReplicaEvery is startReplica renewing every retry.
func startReplicaEvery(t *testing.T, ns, id string, shards int, l *ledger, retry time.Duration) *replica {
	t.Helper()
	r := &replica{id: id, stop: make(chan struct{}), done: make(chan struct{})}
	rc := rest.CopyConfig(cluster.Config())
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return cutTransport{r: r, next: rt} }
	kc, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Shards: shards, ID: id, Namespace: ns, Duration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retry}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})).With("replica", id)
	if r.m, err = New(kc, o, l.work(id), log); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { defer close(r.done); r.m.Run(ctx, r.stop) }()
	t.Cleanup(func() { r.shutdown() })
	return r
}

func (r *replica) shutdown() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
	r.cancel()
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func namespace(t *testing.T) string {
	t.Helper()
	kc := kubernetes.NewForConfigOrDie(cluster.Config())
	ns := fmt.Sprintf("shard-%d", time.Now().UnixNano()%1e9)
	if _, err := kc.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// TestThreeReplicasSplitThirtyApps runs three Managers against the real
// API server: they split 30 apps so that each app is passed by exactly
// one of them; a replica cut off from the API server hands its apps to
// the others once its Leases expire; a replica that joins, and one that
// stops, rebalance; and no shard is ever worked by two at once.
func TestThreeReplicasSplitThirtyApps(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
	const shards = 3
	ns := namespace(t)
	l := &ledger{t: t, running: map[int]string{}, starts: map[int]int{}}
	var apps []string
	for i := range 30 {
		apps = append(apps, fmt.Sprintf("app-%02d", i))
	}
	rs := map[string]*replica{}
	for _, id := range []string{"replica-a", "replica-b", "replica-c"} {
		rs[id] = startReplica(t, ns, id, shards, l)
	}
	// ownedOnce checks every app is passed by exactly one of live, and,
	// when there are no more replicas than shards, that each passes some.
	ownedOnce := func(live ...string) (bool, string) {
		per := map[string]int{}
		for _, app := range apps {
			var owners []string
			for _, id := range live {
				if rs[id].m.Owns(app) {
					owners = append(owners, id)
				}
			}
			if len(owners) != 1 {
				return false, fmt.Sprintf("app %s is passed by %v; shards held: %v", app, owners, l.owners())
			}
			per[owners[0]]++
		}
		for _, id := range live {
			if per[id] == 0 && len(live) <= shards {
				return false, fmt.Sprintf("%s passes no app: %v", id, per)
			}
		}
		return true, fmt.Sprint(per)
	}
	poll.Until(t, 30*time.Second, "three replicas each pass some of the 30 apps, each app once", func() (bool, string) {
		return ownedOnce("replica-a", "replica-b", "replica-c")
	})

	// Cut one replica off: it stops renewing, drops its shards once it
	// cannot renew, and the others take them once the Leases expire.
	victim := rs["replica-b"]
	victimShards := victim.m.Held()
	cutAt := time.Now()
	victim.cut.Store(true)
	poll.Until(t, 30*time.Second, "the cut-off replica's apps move to the others", func() (bool, string) {
		return ownedOnce("replica-a", "replica-c")
	})
	took := time.Since(cutAt)
	t.Logf("shards %v moved %s after the replica was cut off (Lease duration %s)", victimShards, took.Round(time.Millisecond), leaseDuration)
	// The Leases expire leaseDuration after their last renewal; the
	// others notice the gone member within a retry period, and take the
	// shard at their next try.
	if limit := leaseDuration + renewDeadline; took > limit {
		t.Errorf("the apps moved after %s, want within %s", took, limit)
	}
	if victim.m.Held() != nil {
		t.Errorf("the cut-off replica still passes shards %v", victim.m.Held())
	}

	// A replica that comes back, and one that joins, get their share.
	victim.cut.Store(false)
	rs["replica-d"] = startReplica(t, ns, "replica-d", shards, l)
	poll.Until(t, 30*time.Second, "four replicas split the apps, each app once", func() (bool, string) {
		ok, why := ownedOnce("replica-a", "replica-b", "replica-c", "replica-d")
		if !ok {
			return false, why
		}
		// With 3 shards and 4 members, one member holds none, and the
		// holders are what every replica's assignment keeps.
		owners := l.owners()
		want := map[int]string{}
		for id, ks := range Assign([]string{"replica-a", "replica-b", "replica-c", "replica-d"}, shards, owners) {
			for _, k := range ks {
				want[k] = id
			}
		}
		return maps.Equal(owners, want), fmt.Sprintf("shards held %v, assigned %v", owners, want)
	})

	// A replica that stops gives its shards up at once, without waiting
	// for its Leases to expire.
	var leaving *replica
	for _, id := range []string{"replica-a", "replica-c", "replica-d", "replica-b"} {
		if len(rs[id].m.Held()) > 0 {
			leaving = rs[id]
			break
		}
	}
	stoppedAt := time.Now()
	leaving.shutdown()
	poll.Until(t, 30*time.Second, "the stopped replica's shards are taken", func() (bool, string) {
		owners := l.owners()
		for _, id := range owners {
			if id == leaving.id {
				return false, fmt.Sprint(owners)
			}
		}
		return len(owners) == shards, fmt.Sprint(owners)
	})
	if took := time.Since(stoppedAt); took >= leaseDuration {
		t.Errorf("a stopped replica's shards moved after %s, want before the Lease duration (%s): it releases them", took, leaseDuration)
	}
	kc := kubernetes.NewForConfigOrDie(cluster.Config())
	if _, err := kc.CoordinationV1().Leases(ns).Get(context.Background(), memberName(leaving.id), metav1.GetOptions{}); err == nil {
		t.Errorf("the stopped replica's member Lease is still there")
	}
}

// TestIdleReplicaSurveysFromItsWatch: once a replica holds its shards,
// its surveys read the Leases from a watch, not a LIST every retry
// period.
func TestIdleReplicaSurveysFromItsWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
	ns := namespace(t)
	l := &ledger{t: t, running: map[int]string{}, starts: map[int]int{}}
	r := startReplica(t, ns, "replica-a", 2, l)
	poll.Until(t, 30*time.Second, "both shards held", func() (bool, string) { return len(r.m.Held()) == 2, fmt.Sprint(r.m.Held()) })
	r.lists.Store(0)
	from := r.renews.Load()
	poll.Until(t, 30*time.Second, "12 retry periods (member Lease renewals)", func() (bool, string) {
		n := r.renews.Load() - from
		return n >= 12, fmt.Sprintf("%d renewals", n)
	})
	if n := r.lists.Load(); n > 0 {
		t.Errorf("%d LISTs of the Leases over 12 retry periods, idle; want none (the watch)", n)
	}
}

// TestDeadReplicasShardsMoveAtTheLeaseDuration: with a retry period a
// third of the Lease duration (the defaults' ratio), a dead replica's
// shards are taken as soon as its Leases count as gone, not at the
// survivors' next tick and their electors' next jittered try.
func TestDeadReplicasShardsMoveAtTheLeaseDuration(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs the control plane binaries in bin/ (make kube)")
	}
	const retry = time.Second
	ns := namespace(t)
	l := &ledger{t: t, running: map[int]string{}, starts: map[int]int{}}
	a := startReplicaEvery(t, ns, "replica-a", 4, l, retry)
	b := startReplicaEvery(t, ns, "replica-b", 4, l, retry)
	poll.Until(t, 30*time.Second, "two replicas holding two shards each", func() (bool, string) {
		return len(a.m.Held()) == 2 && len(b.m.Held()) == 2, fmt.Sprint(l.owners())
	})
	cutAt := time.Now()
	b.cut.Store(true)
	poll.Until(t, 30*time.Second, "replica-a holding all four", func() (bool, string) { return len(a.m.Held()) == 4, fmt.Sprint(l.owners()) })
	took := time.Since(cutAt)
	t.Logf("the cut-off replica's shards moved %s after the cut (Lease duration %s, retry %s)", took.Round(time.Millisecond), leaseDuration, retry)
	// Its last renewal was at most a retry before the cut, so its Leases
	// count as gone at most leaseDuration after the cut.
	if limit := leaseDuration + retry/2; took > limit {
		t.Errorf("the shards moved %s after the cut, want within %s", took, limit)
	}
}
