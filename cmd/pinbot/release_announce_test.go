package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/imageref"
	"pinbot.dev/pinbot/internal/testenv/poll"
	"pinbot.dev/pinbot/release"
)

// waitAnnounced waits until serve (replica rep) has announced that bad
// was held in staging and rolled back, everywhere people and tools look:
// Events on the staging app's object, its notify: webhook, and /metrics.
func (r *releaseRig) waitAnnounced(t *testing.T, rep *replica, bad string) {
	t.Helper()
	ctx := context.Background()
	// kubectl get events shows the hold and the rollback on the
	// staging app's object, as Warnings.
	poll.Until(t, 30*time.Second, "Held and RollbackOpened Events on web-staging", func() (bool, string) {
		evs, err := r.peers.Kube.CoreV1().Events("pinbot-system").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=pinbot-app-web-staging"})
		if err != nil {
			return false, err.Error()
		}
		var got []string
		warned := map[string]bool{}
		for _, e := range evs.Items {
			got = append(got, e.Type+" "+e.Reason+": "+e.Message)
			if e.Type == "Warning" && strings.Contains(e.Message, imageref.Short(bad)) {
				warned[e.Reason] = true
			}
		}
		return warned[release.ReasonHeld] && warned[release.ReasonRollbackOpened], strings.Join(got, "\n")
	})
	// serve's notify: webhook got the hold and the rollback, signed,
	// and the staging app's proof changes.
	poll.Until(t, 30*time.Second, "the hold, the rollback and a proof change notified", func() (bool, string) {
		for _, want := range [][3]string{
			{release.ReasonHeld, "staging", imageref.Short(bad)},
			{release.ReasonRollbackOpened, "staging", imageref.Short(bad)},
			{"Pending", "staging", ""},
		} {
			if ok, got := r.notified.has(want[0], want[1], want[2]); !ok {
				return false, got
			}
		}
		return true, ""
	})
	// And on /metrics, for the alerts.
	poll.Until(t, 30*time.Second, "the rollback and the holds on /metrics", func() (bool, string) {
		resp, err := http.Get("http://" + rep.addr + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "pinbot_release_") {
				lines = append(lines, l)
			}
		}
		m := strings.Join(lines, "\n")
		return strings.Contains(m, `pinbot_release_decisions_total{env="staging",reason="RollbackOpened",repo="`) &&
			strings.Contains(m, `pinbot_release_holds{env="prod",repo="`) && strings.Contains(m, `pinbot_release_holds{env="staging",repo="`) &&
			!strings.Contains(m, `pinbot_release_holds{env="staging",repo="`+r.peers.Gitea.AdminUser+`/manifests"} 0`), m
	})
}
