package status

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/reconciler/config"
	"pinbot.dev/pinbot/reconciler/diff"
	"pinbot.dev/pinbot/reconciler/guard"
	"pinbot.dev/pinbot/reconciler/object"
	"pinbot.dev/pinbot/reconciler/verdict"
	"pinbot.dev/pinbot/render"
)

func TestStatusOf(t *testing.T) {
	app := &config.App{Name: "shop", Repo: "https://pinbot:s3cret@git.example/team/shop.git", Branch: "main", Path: "app",
		SyncPolicy: config.SyncPolicy{Automated: true}}
	at := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	down := at.Add(-3 * time.Minute)
	web := object.Ref{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	cm := object.Ref{Kind: "ConfigMap", Namespace: "shop", Name: "settings"}
	old := object.Ref{Kind: "ConfigMap", Namespace: "shop", Name: "old"}
	replicas := diff.Field{Object: web, Path: "spec.replicas", Pointer: "/spec/replicas", Git: int64(1), Live: int64(3)}
	healthy := &verdict.HealthReport{Health: verdict.Healthy, Objects: []verdict.ObjectHealth{{Object: web, Status: "Current"}}}
	verified := &verdict.Verification{App: "shop", Commit: "c1", Verified: true, Containers: []verdict.ContainerVerdict{
		{Namespace: "shop", Pod: "web-1", Container: "app", GitDigest: "sha256:" + strings.Repeat("a", 64), RunningDigest: "sha256:" + strings.Repeat("a", 64), Verdict: verdict.Verified},
	}}
	base := func(f func(*App)) *App {
		s := &App{App: "shop", Repo: "https://git.example/team/shop.git", Branch: "main", Path: "app", Automated: true,
			ObservedAt: at, Sync: SyncUnknown, Health: verdict.HealthUnknown}
		f(s)
		if s.Proof == "" {
			s.Proof = verdict.Pending
			if s.Verified {
				s.Proof = verdict.Verified
			}
		}
		if s.Verified && s.Pods == nil {
			s.Pods = verified.Containers
		}
		if s.Source == "" { // pinbot's own app: it deployed the synced commit
			s.Source, s.HeadCommit, s.DeployedCommit = "pinbot", s.Commit, s.SyncedCommit
		}
		return s
	}
	sourceErr := errors.New("source https://git.example/team/shop.git: connection refused")
	for _, tc := range []struct {
		name string
		o    Observation
		want *App
	}{
		{"in sync, healthy and verified",
			Observation{Commit: "c1", Compared: true, Sync: Synced, SyncedCommit: "c1", Health: healthy, Verification: verified},
			base(func(s *App) {
				s.Commit, s.Sync, s.SyncedCommit, s.Health, s.Objects = "c1", Synced, "c1", verdict.Healthy, healthy.Objects
				s.Verified, s.Verification = true, verified.Summary()
			})},
		{"drift and an orphan make it OutOfSync, each object once",
			Observation{Commit: "c1", Compared: true, Sync: OutOfSync, OutOfSync: []object.Ref{cm, web}, Drift: []diff.Field{replicas}, Orphans: []object.Ref{old}},
			base(func(s *App) {
				s.Commit, s.Sync, s.OutOfSync, s.Drift, s.Orphaned = "c1", OutOfSync, []object.Ref{cm, web, old}, []diff.Field{replicas}, []object.Ref{old}
			})},
		{"drift alone makes a Synced comparison OutOfSync",
			Observation{Commit: "c1", Compared: true, Sync: Synced, Drift: []diff.Field{replicas}},
			base(func(s *App) {
				s.Commit, s.Sync, s.OutOfSync, s.Drift = "c1", OutOfSync, []object.Ref{web}, []diff.Field{replicas}
			})},
		{"a drift war overrides health",
			Observation{Commit: "c1", Compared: true, Sync: Synced, Health: healthy, War: "drift war on web", Verification: verified},
			base(func(s *App) {
				s.Commit, s.Sync, s.Health, s.HealthReason, s.Objects = "c1", Synced, verdict.Degraded, "drift war on web", healthy.Objects
				s.Verified, s.Verification = true, verified.Summary()
			})},
		{"source unreachable: dated, with the frozen drift of the last commit",
			Observation{Commit: "c0", Err: sourceErr, SourceDown: down, Drift: []diff.Field{replicas}},
			base(func(s *App) {
				s.Commit, s.Drift, s.SourceUnreachableSince = "c0", []diff.Field{replicas}, &down
				s.Error = "source unreachable since 2026-05-04T09:57:00Z: source https://git.example/team/shop.git: connection refused"
			})},
		{"cluster unreachable while reading it",
			Observation{Commit: "c1", Err: errors.New("connection refused"), Stage: "reading the cluster", ClusterDown: down},
			base(func(s *App) {
				s.Commit, s.ClusterUnreachableSince, s.Proof = "c1", &down, verdict.Unknown
				s.Error = "kubernetes API unreachable since 2026-05-04T09:57:00Z: reading the cluster: connection refused"
			})},
		{"a forbidden object, not transient: the stage prefixes the error",
			Observation{Commit: "c1", Err: errors.New("forbidden"), Stage: "reading the cluster"},
			base(func(s *App) { s.Commit, s.Error = "c1", "reading the cluster: forbidden" })},
		{"an empty render is refused and Degraded",
			Observation{Commit: "c2", Err: &render.Error{File: "app", Err: guard.ErrEmpty}, SyncedCommit: "c1"},
			base(func(s *App) {
				msg := (&render.Error{File: "app", Err: guard.ErrEmpty}).Error()
				s.Commit, s.SyncedCommit, s.Error, s.Health, s.HealthReason = "c2", "c1", msg, verdict.Degraded, msg
			})},
		{"a diff error keeps what the pass found after it",
			Observation{Commit: "c1", Compared: true, Sync: Synced, Err: errors.New("dry run of web: invalid"), Health: healthy, Verification: verified},
			base(func(s *App) {
				s.Commit, s.Sync, s.Health, s.Objects, s.Error = "c1", Synced, verdict.Healthy, healthy.Objects, "dry run of web: invalid"
				s.Verified, s.Verification = true, verified.Summary()
			})},
		{"a verify-only app says who deployed what",
			Observation{Commit: "c2", Compared: true, Sync: OutOfSync, Health: &verdict.HealthReport{Health: verdict.HealthUnknown, Reason: "Argo CD's operation is still Running"},
				Deployed: &Deployed{Source: "argocd", Repo: "https://pinbot:s3cret@git.example/team/guestbook.git", Path: "deploy",
					Branch: "main", Commit: "c1"}},
			base(func(s *App) {
				s.Repo, s.Path, s.Automated = "https://git.example/team/guestbook.git", "deploy", false
				s.Commit, s.HeadCommit, s.DeployedCommit, s.Source, s.Sync = "c2", "c2", "c1", "argocd", OutOfSync
				s.HealthReason = "Argo CD's operation is still Running"
			})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.App, tc.o.At = app, at
			got := Of(tc.o)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("statusOf (-want +got):\n%s", diff)
			}
			if again := Of(tc.o); !cmp.Equal(got, again) {
				t.Errorf("statusOf is not deterministic: %+v, then %+v", got, again)
			}
		})
	}
}

func TestDegradeEmpty(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		wantHealth verdict.Health
		wantReason string
	}{
		{"an empty render", &render.Error{File: "app", Err: guard.ErrEmpty}, verdict.Degraded, "render: app: " + guard.ErrEmpty.Error()},
		{"a refused prune", fmt.Errorf("refusing to delete 2 objects of the app: %w", guard.ErrEmpty), verdict.Degraded, "refusing to delete 2 objects of the app: " + guard.ErrEmpty.Error()},
		{"another refusal", &render.Error{File: "app/x.yaml", Line: 3, Err: errors.New("bad")}, verdict.HealthUnknown, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &App{Health: verdict.HealthUnknown}
			degradeEmpty(s, tc.err)
			if s.Health != tc.wantHealth || s.HealthReason != tc.wantReason {
				t.Errorf("health %s (%q), want %s (%q)", s.Health, s.HealthReason, tc.wantHealth, tc.wantReason)
			}
		})
	}
}

// TestStatusKeepsAtMostMaxPods: the stored proof is bounded, whatever
// the app's size; the summary still counts every Pod.
func TestStatusKeepsAtMostMaxPods(t *testing.T) {
	v := &verdict.Verification{App: "big", Verified: true}
	for i := range MaxPods + 50 {
		v.Containers = append(v.Containers, verdict.ContainerVerdict{Pod: "p-" + strconv.Itoa(i), Container: "app", Verdict: verdict.Verified})
	}
	s := Of(Observation{App: &config.App{Name: "big"}, Verification: v})
	if len(s.Pods) != MaxPods || s.Pods[0].Pod != "p-0" {
		t.Errorf("kept %d Pods, want the first %d", len(s.Pods), MaxPods)
	}
}

// A status the same but for when and by which replica it was observed is
// not stored again: a replica taking over a dead one's apps rewrites none
// it finds unchanged. Any other change is stored.
func TestSameAsIgnoresWhenAndWho(t *testing.T) {
	a := &App{App: "web", Sync: Synced, Verified: true, Replica: "r1", ObservedAt: time.Unix(1, 0)}
	b := *a
	b.Replica, b.ObservedAt = "r2", time.Unix(2, 0)
	if !a.SameAs(&b) {
		t.Errorf("a status taken over by another replica later counts as changed")
	}
	b.Verified = false
	if a.SameAs(&b) {
		t.Errorf("a status whose proof changed counts as the same")
	}
}
