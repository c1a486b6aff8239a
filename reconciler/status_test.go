package reconciler

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/render"
)

func TestStatusOf(t *testing.T) {
	app := &App{Name: "shop", Repo: "https://pinbot:s3cret@git.example/team/shop.git", Branch: "main", Path: "app",
		SyncPolicy: SyncPolicy{Automated: true}}
	at := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	down := at.Add(-3 * time.Minute)
	web := ObjectRef{Group: "apps", Kind: "Deployment", Namespace: "shop", Name: "web"}
	cm := ObjectRef{Kind: "ConfigMap", Namespace: "shop", Name: "settings"}
	old := ObjectRef{Kind: "ConfigMap", Namespace: "shop", Name: "old"}
	replicas := Drift{Object: web, Path: "spec.replicas", Pointer: "/spec/replicas", Git: int64(1), Live: int64(3)}
	healthy := &HealthReport{Health: Healthy, Objects: []ObjectHealth{{Object: web, Status: "Current"}}}
	verified := &Verification{App: "shop", Commit: "c1", Verified: true, Containers: []ContainerVerdict{
		{Namespace: "shop", Pod: "web-1", Container: "app", GitDigest: "sha256:" + strings.Repeat("a", 64), RunningDigest: "sha256:" + strings.Repeat("a", 64), Verdict: Verified},
	}}
	base := func(f func(*AppStatus)) *AppStatus {
		s := &AppStatus{App: "shop", Repo: "https://git.example/team/shop.git", Branch: "main", Path: "app", Automated: true,
			ObservedAt: at, Sync: SyncUnknown, Health: HealthUnknown}
		f(s)
		if s.Source == "" { // pinbot's own app: it deployed the synced commit
			s.Source, s.HeadCommit, s.DeployedCommit = "pinbot", s.Commit, s.SyncedCommit
		}
		return s
	}
	sourceErr := &SourceError{Repo: "https://git.example/team/shop.git", Err: errors.New("connection refused")}
	for _, tc := range []struct {
		name string
		o    observation
		want *AppStatus
	}{
		{"in sync, healthy and verified",
			observation{commit: "c1", compared: true, sync: Synced, syncedCommit: "c1", health: healthy, verification: verified},
			base(func(s *AppStatus) {
				s.Commit, s.Sync, s.SyncedCommit, s.Health, s.Objects = "c1", Synced, "c1", Healthy, healthy.Objects
				s.Verified, s.Verification = true, verified.Summary()
			})},
		{"drift and an orphan make it OutOfSync, each object once",
			observation{commit: "c1", compared: true, sync: OutOfSync, outOfSync: []ObjectRef{cm, web}, drift: []Drift{replicas}, orphans: []ObjectRef{old}},
			base(func(s *AppStatus) {
				s.Commit, s.Sync, s.OutOfSync, s.Drift, s.Orphaned = "c1", OutOfSync, []ObjectRef{cm, web, old}, []Drift{replicas}, []ObjectRef{old}
			})},
		{"drift alone makes a Synced comparison OutOfSync",
			observation{commit: "c1", compared: true, sync: Synced, drift: []Drift{replicas}},
			base(func(s *AppStatus) {
				s.Commit, s.Sync, s.OutOfSync, s.Drift = "c1", OutOfSync, []ObjectRef{web}, []Drift{replicas}
			})},
		{"a drift war overrides health",
			observation{commit: "c1", compared: true, sync: Synced, health: healthy, war: "drift war on web", verification: verified},
			base(func(s *AppStatus) {
				s.Commit, s.Sync, s.Health, s.HealthReason, s.Objects = "c1", Synced, Degraded, "drift war on web", healthy.Objects
				s.Verified, s.Verification = true, verified.Summary()
			})},
		{"source unreachable: dated, with the frozen drift of the last commit",
			observation{commit: "c0", err: sourceErr, sourceDown: down, drift: []Drift{replicas}},
			base(func(s *AppStatus) {
				s.Commit, s.Drift, s.SourceUnreachableSince = "c0", []Drift{replicas}, &down
				s.Error = "source unreachable since 2026-05-04T09:57:00Z: source https://git.example/team/shop.git: connection refused"
			})},
		{"cluster unreachable while reading it",
			observation{commit: "c1", err: errors.New("connection refused"), stage: "reading the cluster", clusterDown: down},
			base(func(s *AppStatus) {
				s.Commit, s.ClusterUnreachableSince = "c1", &down
				s.Error = "kubernetes API unreachable since 2026-05-04T09:57:00Z: reading the cluster: connection refused"
			})},
		{"a forbidden object, not transient: the stage prefixes the error",
			observation{commit: "c1", err: errors.New("forbidden"), stage: "reading the cluster"},
			base(func(s *AppStatus) { s.Commit, s.Error = "c1", "reading the cluster: forbidden" })},
		{"an empty render is refused and Degraded",
			observation{commit: "c2", err: &render.Error{File: "app", Err: errEmpty}, syncedCommit: "c1"},
			base(func(s *AppStatus) {
				msg := (&render.Error{File: "app", Err: errEmpty}).Error()
				s.Commit, s.SyncedCommit, s.Error, s.Health, s.HealthReason = "c2", "c1", msg, Degraded, msg
			})},
		{"a diff error keeps what the pass found after it",
			observation{commit: "c1", compared: true, sync: Synced, err: errors.New("dry run of web: invalid"), health: healthy, verification: verified},
			base(func(s *AppStatus) {
				s.Commit, s.Sync, s.Health, s.Objects, s.Error = "c1", Synced, Healthy, healthy.Objects, "dry run of web: invalid"
				s.Verified, s.Verification = true, verified.Summary()
			})},
		{"a verify-only app says who deployed what",
			observation{commit: "c2", compared: true, sync: OutOfSync, health: &HealthReport{Health: HealthUnknown, Reason: "Argo CD's operation is still Running"},
				deployed: &deployedApp{source: deployer.Source{Kind: deployer.ArgoCD, RepoURL: "https://pinbot:s3cret@git.example/team/guestbook.git", Path: "deploy"},
					branch: "main", revision: deployer.Revision{Commit: "c1"}}},
			base(func(s *AppStatus) {
				s.Repo, s.Path, s.Automated = "https://git.example/team/guestbook.git", "deploy", false
				s.Commit, s.HeadCommit, s.DeployedCommit, s.Source, s.Sync = "c2", "c2", "c1", "argocd", OutOfSync
				s.HealthReason = "Argo CD's operation is still Running"
			})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.app, tc.o.at = app, at
			got := statusOf(tc.o)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("statusOf (-want +got):\n%s", diff)
			}
			if again := statusOf(tc.o); !cmp.Equal(got, again) {
				t.Errorf("statusOf is not deterministic: %+v, then %+v", got, again)
			}
		})
	}
}
