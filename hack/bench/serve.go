package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/reconciler/history"
)

func init() { register("serve", benchServe) }

// The serve measurements: two `pinbot serve --leader-elect` replicas on 20
// apps, with short lease timings.
const (
	serveApps     = 20
	serveRounds   = 10
	serveSettle   = 20 * time.Second
	serveSecret   = "bench-serve-secret"
	serveLeaseArg = "4s"
)

// serveChild is a running `pinbot serve`: its replica id and address.
type serveChild struct {
	*recChild
	id, addr string
}

// benchServe measures webhook to sync start through a follower, the
// leader's idle RSS with 20 apps, and the failover after SIGTERM.
func benchServe(ctx context.Context, r *report) error {
	b, done, err := startRecBench(ctx, "serve")
	defer done()
	if err != nil {
		return err
	}
	var apps []recApp
	for i := range serveApps {
		name := fmt.Sprintf("serve-%02d", i)
		if err := b.namespaces(ctx, name); err != nil {
			return err
		}
		if err := b.gitea.CreateRepo(ctx, b.owner, name, "main"); err != nil {
			return err
		}
		if _, err := b.push(ctx, name, map[string]string{"app/cm.yaml": recConfigMap("settings", 0)}); err != nil {
			return err
		}
		apps = append(apps, recApp{name: name, automated: true})
	}
	cfg, err := b.config("serve.yaml", 10*time.Minute, apps...)
	if err != nil {
		return err
	}
	secretFile := filepath.Join(b.tmp, "secret")
	if err := os.WriteFile(secretFile, []byte(serveSecret), 0o600); err != nil {
		return err
	}
	start := func(id string) (*serveChild, error) {
		return b.startServe(id, cfg, "--webhook-secret-file", secretFile,
			"--leader-elect", "--id", id, "--lease-duration", serveLeaseArg, "--renew-deadline", "3s", "--retry-period", "1s")
	}
	a, err := start("bench-a")
	if err != nil {
		return err
	}
	defer a.stop()
	bb, err := start("bench-b")
	if err != nil {
		return err
	}
	defer bb.stop()
	holder := func() string {
		l, err := b.kube.CoordinationV1().Leases("pinbot-system").Get(ctx, "pinbot", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	// started is when the leader's sync of commit started (the history
	// entry's time, taken before the first apply), zero until the sync is
	// recorded.
	started := func(app, commit string) time.Time {
		cm, err := b.kube.CoreV1().ConfigMaps("pinbot-system").Get(ctx, "pinbot-app-"+app, metav1.GetOptions{})
		if err != nil {
			return time.Time{}
		}
		var es []history.Entry
		_ = json.Unmarshal([]byte(cm.Data["history.json"]), &es)
		for _, e := range es {
			if e.Commit == commit {
				return e.Time
			}
		}
		return time.Time{}
	}
	if _, err := benchPoll(ctx, 2*time.Minute, "a leader", func() bool { return holder() == a.id || holder() == bb.id }); err != nil {
		return err
	}
	leader, follower := a, bb
	if holder() == bb.id {
		leader, follower = bb, a
	}
	if err := recSleepPlain(ctx, serveSettle); err != nil {
		return err
	}
	rss, _, err := procMemory(leader.cmd.Process.Pid)
	if err != nil {
		return err
	}
	r.check(fmt.Sprintf("serve: idle RSS of the leader, %d apps", serveApps), mb(rss), "≤ 80 MB", rss <= 80<<20)

	var lat, recorded []time.Duration
	app := apps[0].name
	for i := range serveRounds {
		commit, err := b.push(ctx, app, map[string]string{"app/cm.yaml": recConfigMap("settings", i+1)})
		if err != nil {
			return err
		}
		sent := time.Now()
		if err := postPush(ctx, follower.addr, serveSecret, commit, b.gitea.RepoURL(b.owner, app)); err != nil {
			return fmt.Errorf("webhook to the follower: %w", err)
		}
		var start time.Time
		if _, err := benchPoll(ctx, 30*time.Second, "the sync of "+commit[:8], func() bool { start = started(app, commit); return !start.IsZero() }); err != nil {
			return err
		}
		// The sync starts after the leader fetched and rendered the pushed
		// commit; recorded is when its history entry was readable, which
		// adds the apply and the write.
		lat = append(lat, start.Sub(sent))
		recorded = append(recorded, time.Since(sent))
	}
	p50 := recMedian(lat)
	r.check("serve: webhook to a follower to the leader's sync start, p50", recRound(p50).String()+" ("+recDurations(lat)+")", "≤ 100 ms", p50 <= 100*time.Millisecond)
	r.info("serve: webhook to a follower to the sync recorded, p50", recRound(recMedian(recorded)).String()+" ("+recDurations(recorded)+")")

	sigterm := time.Now()
	_ = leader.cmd.Process.Signal(syscall.SIGTERM)
	if _, err := benchPoll(ctx, 30*time.Second, "failover after SIGTERM", func() bool { return holder() == follower.id }); err != nil {
		return err
	}
	took := time.Since(sigterm)
	r.check("serve: failover after SIGTERM of the leader (lease "+serveLeaseArg+")", recRound(took).String(), "≤ 4s", took <= 4*time.Second)
	return nil
}

// recSleepPlain waits d unless ctx ends.
func recSleepPlain(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// startServe starts `pinbot serve` on config cfg as child id, with its
// own cache, listening on a free loopback port, with the extra flags.
// Its output goes to serve-<id>.log in the run's directory.
func (b *recBench) startServe(id, cfg string, extra ...string) (*serveChild, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := b.startChild(id, filepath.Join(b.tmp, "serve-"+id+".log"), append([]string{"serve", "--config", cfg, "--kubeconfig", b.cluster.Kubeconfig,
		"--cache-dir", filepath.Join(b.tmp, "cache-"+id), "--listen", addr}, extra...)...)
	if err != nil {
		return nil, err
	}
	return &serveChild{recChild: c, id: id, addr: addr}, nil
}

// benchPoll checks cond every 5ms until it holds, and returns how long
// that took; an error names what did not happen within timeout.
func benchPoll(ctx context.Context, timeout time.Duration, what string, cond func() bool) (time.Duration, error) {
	begin := time.Now()
	for deadline := begin.Add(timeout); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("%s: not within %s", what, timeout)
		}
	}
	return time.Since(begin), nil
}
