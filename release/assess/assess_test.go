package assess

import (
	"errors"
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/reconciler/verdict"
)

const (
	img = "registry.example/org/web"
	dA  = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	dB  = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	dC  = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

func view(health verdict.Health, verified bool, cs ...verdict.ContainerVerdict) Report {
	return Report{App: "web", Health: health, Commit: "c1", Verified: verified, Synced: true, Containers: cs}
}

func container(pod, image, git string, v verdict.Verdict, ready bool, waiting string) verdict.ContainerVerdict {
	return verdict.ContainerVerdict{Namespace: "prod", Pod: pod, Container: "app", Image: image, GitDigest: git, RunningDigest: git, Verdict: v, Ready: ready, Waiting: waiting}
}

func notReadySince(c verdict.ContainerVerdict, at string) verdict.ContainerVerdict {
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		panic(err)
	}
	c.NotReadySince = &t
	return c
}

func TestAssess(t *testing.T) {
	other := container("side-1", "registry.example/org/side", dC, verdict.Mismatch, false, "")
	for _, tc := range []struct {
		name    string
		views   []Report
		proven  bool
		why     string // part of Why
		failure string // part of Failure
		stuck   string
	}{
		{"proven", []Report{view(verdict.Healthy, true, container("w1", img, dA, verdict.Verified, true, ""), other)}, true, "", "", ""},
		{"another image's mismatch does not count", []Report{view(verdict.Healthy, false, container("w1", img, dA, verdict.Verified, true, ""), other)}, true, "", "", ""},
		{"git of the revision pins another digest", []Report{view(verdict.Healthy, true, container("w1", img, dB, verdict.Verified, true, ""))}, false, "pins sha256:bbbbbbbbbbbb", "", ""},
		{"mismatch", []Report{view(verdict.Healthy, false, container("w1", img, dA, verdict.Mismatch, true, ""))}, false, "pod prod/w1 container app is Mismatch", "", ""},
		{"not ready", []Report{view(verdict.Progressing, true, container("w1", img, dA, verdict.Verified, false, ""))}, false, "not Ready", "", ""},
		{"crash loop", []Report{view(verdict.Progressing, true, container("w1", img, dA, verdict.Verified, false, "CrashLoopBackOff"))}, false, "waiting: CrashLoopBackOff", "", "CrashLoopBackOff"},
		{"a crash loop, Degraded at once by the health check, fails at the deadline", []Report{view(verdict.Degraded, true, container("w1", img, dA, verdict.Verified, false, "CrashLoopBackOff"))}, false, "waiting: CrashLoopBackOff", "", "CrashLoopBackOff"},
		{"a crash loop says since when", []Report{view(verdict.Progressing, true, notReadySince(container("w1", img, dA, verdict.Verified, false, "CrashLoopBackOff"), "2026-12-04T09:30:00Z"))}, false,
			"waiting: CrashLoopBackOff (not Ready since 2026-12-04T09:30:00Z)", "", "pod prod/w1 container app: CrashLoopBackOff (not Ready since 2026-12-04T09:30:00Z)"},
		{"not ready says since when", []Report{view(verdict.Progressing, true, notReadySince(container("w1", img, dA, verdict.Verified, false, ""), "2026-12-04T09:31:00Z"))}, false, "is not Ready (not Ready since 2026-12-04T09:31:00Z)", "", ""},
		{"degraded", []Report{view(verdict.Degraded, true, container("w1", img, dA, verdict.Verified, true, ""))}, false, "Degraded", "Degraded", ""},
		{"a rollout not applied yet is no failure", []Report{{App: "web", Health: "Healthy", Containers: []verdict.ContainerVerdict{container("w1", img, dA, verdict.Mismatch, true, "")}}}, false, "not synced", "", ""},
		{"an app not observed", []Report{{App: "web", Err: errors.New("cluster unreachable")}}, false, "cluster unreachable", "", ""},
		{"no Pod runs the image", []Report{view(verdict.Healthy, true, other)}, false, "no Pod of the environment's apps runs", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Of(img, dA, tc.views)
			if o.Proven != tc.proven || !strings.Contains(o.Why, tc.why) || !strings.Contains(o.Failure, tc.failure) || (tc.failure == "" && o.Failure != "") {
				t.Errorf("Assess = proven %t, why %q, failure %q; want %t, %q, %q", o.Proven, o.Why, o.Failure, tc.proven, tc.why, tc.failure)
			}
			if got := o.Stuck(); !strings.Contains(got, tc.stuck) || (tc.stuck == "" && got != "") {
				t.Errorf("Stuck = %q, want %q", got, tc.stuck)
			}
		})
	}
}
