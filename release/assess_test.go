package release

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func view(health string, verified bool, cs ...Container) AppReport {
	return AppReport{App: "web", Health: health, Commit: "c1", Verified: verified, Synced: true, Containers: cs}
}

func container(pod, image, git, v string, ready bool, waiting string) Container {
	return Container{Namespace: "prod", Pod: pod, Container: "app", Image: image, GitDigest: git, RunningDigest: git, Verdict: v, Ready: ready, Waiting: waiting}
}

func notReadySince(c Container, at string) Container {
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		panic(err)
	}
	c.NotReadySince = &t
	return c
}

func TestAssess(t *testing.T) {
	other := container("side-1", "registry.example/org/side", dC, mismatch, false, "")
	for _, tc := range []struct {
		name    string
		views   []AppReport
		proven  bool
		why     string // part of Why
		failure string // part of Failure
		stuck   string
	}{
		{"proven", []AppReport{view(healthy, true, container("w1", img, dA, verified, true, ""), other)}, true, "", "", ""},
		{"another image's mismatch does not count", []AppReport{view(healthy, false, container("w1", img, dA, verified, true, ""), other)}, true, "", "", ""},
		{"git of the revision pins another digest", []AppReport{view(healthy, true, container("w1", img, dB, verified, true, ""))}, false, "pins sha256:bbbbbbbbbbbb", "", ""},
		{"mismatch", []AppReport{view(healthy, false, container("w1", img, dA, mismatch, true, ""))}, false, "pod prod/w1 container app is Mismatch", "", ""},
		{"not ready", []AppReport{view("Progressing", true, container("w1", img, dA, verified, false, ""))}, false, "not Ready", "", ""},
		{"crash loop", []AppReport{view("Progressing", true, container("w1", img, dA, verified, false, "CrashLoopBackOff"))}, false, "waiting: CrashLoopBackOff", "", "CrashLoopBackOff"},
		{"a crash loop, Degraded at once by the health check, fails at the deadline", []AppReport{view(degraded, true, container("w1", img, dA, verified, false, "CrashLoopBackOff"))}, false, "waiting: CrashLoopBackOff", "", "CrashLoopBackOff"},
		{"a crash loop says since when", []AppReport{view("Progressing", true, notReadySince(container("w1", img, dA, verified, false, "CrashLoopBackOff"), "2026-12-04T09:30:00Z"))}, false,
			"waiting: CrashLoopBackOff (not Ready since 2026-12-04T09:30:00Z)", "", "pod prod/w1 container app: CrashLoopBackOff (not Ready since 2026-12-04T09:30:00Z)"},
		{"not ready says since when", []AppReport{view("Progressing", true, notReadySince(container("w1", img, dA, verified, false, ""), "2026-12-04T09:31:00Z"))}, false, "is not Ready (not Ready since 2026-12-04T09:31:00Z)", "", ""},
		{"degraded", []AppReport{view(degraded, true, container("w1", img, dA, verified, true, ""))}, false, "Degraded", "Degraded", ""},
		{"a rollout not applied yet is no failure", []AppReport{{App: "web", Health: "Healthy", Containers: []Container{container("w1", img, dA, mismatch, true, "")}}}, false, "not synced", "", ""},
		{"an app not observed", []AppReport{{App: "web", Err: errors.New("cluster unreachable")}}, false, "cluster unreachable", "", ""},
		{"no Pod runs the image", []AppReport{view(healthy, true, other)}, false, "no Pod of the environment's apps runs", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Assess(img, dA, tc.views)
			if o.Proven != tc.proven || !strings.Contains(o.Why, tc.why) || !strings.Contains(o.Failure, tc.failure) || (tc.failure == "" && o.Failure != "") {
				t.Errorf("Assess = proven %t, why %q, failure %q; want %t, %q, %q", o.Proven, o.Why, o.Failure, tc.proven, tc.why, tc.failure)
			}
			if got := o.Stuck(); !strings.Contains(got, tc.stuck) || (tc.stuck == "" && got != "") {
				t.Errorf("Stuck = %q, want %q", got, tc.stuck)
			}
		})
	}
}
