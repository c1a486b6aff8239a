package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/reconciler/history"
)

// TestServeSIGTERMCutsOffSync sends SIGTERM to the leader while a sync
// waits for its first wave (a Job that runs 20 s), with a shutdown timeout
// of 1 s: the leader cuts the sync off, records it as interrupted (Failed,
// so not Applied), exits 0 and releases the Lease; the new leader's first
// pass applies the commit and finishes it. The commit ends with one
// Applied entry, and the Job is not created twice.
func TestServeSIGTERMCutsOffSync(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs bin/ peers (make tools)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rig := newWaveRig(ctx, t, 20*time.Second)
	kube, commit := rig.peers.Kube, rig.commit
	start := func(id string) *replica { return rig.serve(id, "--shutdown-timeout", "1s") }
	holder, entries := rig.holder, rig.entries
	ofCommit := func() []history.Entry {
		var out []history.Entry
		for _, e := range entries() {
			if e.Commit == commit {
				out = append(out, e)
			}
		}
		return out
	}
	lateApplied := func() bool {
		_, err := kube.CoreV1().ConfigMaps("web").Get(ctx, "late", metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	waitFor := rig.waitFor

	a := start("cut-a")
	waitFor(60*time.Second, "cut-a leads", func() bool { return holder() == "cut-a" })
	b := start("cut-b")
	var jobUID string
	waitFor(60*time.Second, "the Job applied", func() bool {
		j, err := kube.BatchV1().Jobs("web").Get(ctx, "migrate", metav1.GetOptions{})
		if err == nil {
			jobUID = string(j.UID)
		}
		return err == nil
	})
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-a.done:
		if err != nil {
			t.Fatalf("leader after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("leader did not exit within 30s of SIGTERM")
	}
	// The Job runs 20 s: the new leader cannot have finished the sync yet.
	if lateApplied() {
		t.Fatal("the second wave was applied although the sync was cut off")
	}
	es := ofCommit()
	if len(es) != 1 || es[0].Result != history.Failed || !strings.Contains(es[0].Reason, "interrupted") {
		t.Fatalf("history of %s after the cut-off sync: %+v, want one Failed entry saying interrupted", commit[:8], es)
	}
	t.Logf("recorded by the stopped leader: %s: %s", es[0].Result, es[0].Reason)

	waitFor(10*time.Second, "cut-b leads after the release", func() bool { return holder() == "cut-b" })
	waitFor(90*time.Second, "the new leader finishes the sync", func() bool {
		es := ofCommit()
		return len(es) == 1 && es[0].Result == history.Applied && lateApplied()
	})
	j, err := kube.BatchV1().Jobs("web").Get(ctx, "migrate", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(j.UID) != jobUID {
		t.Errorf("the Job was created again (uid %s, was %s)", j.UID, jobUID)
	}
	if es := ofCommit(); len(es) != 1 {
		t.Errorf("the history holds %d entries of %s, want 1: %+v", len(es), commit[:8], es)
	}
	_ = b
}
