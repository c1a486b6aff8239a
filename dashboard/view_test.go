package dashboard

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/reconciler/history"
	"pinbot.dev/pinbot/reconciler/status"
	"pinbot.dev/pinbot/reconciler/verdict"
)

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	commit1 = "0123456789abcdef0123456789abcdef01234567"
)

var (
	now     = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	synced  = time.Date(2026, 12, 1, 11, 58, 0, 0, time.UTC)
	checked = time.Date(2026, 12, 1, 11, 59, 0, 0, time.UTC)
)

// fixtureApps are a verified app, one whose second Pod runs another
// digest, a verify-only Argo CD app before its first pass.
func fixtureApps() []App {
	return []App{
		{
			Name: "web", Source: SourcePinbot,
			Status: &status.App{App: "web", Repo: "http://gitea.test/platform/manifests.git", Commit: commit1,
				Sync: status.OutOfSync, Health: verdict.Degraded, HealthReason: "Deployment/web: 1 of 2 updated",
				Verification: "1 of 2 Pods run what Git pins"},
			Verification: &verdict.Verification{Containers: []verdict.ContainerVerdict{
				{Workload: "Deployment/web", Container: "web", Pod: "web-1", GitDigest: "gitea.test/p/web@" + digestA, RunningDigest: "gitea.test/p/web@" + digestA, Verdict: verdict.Verified},
				{Workload: "Deployment/web", Container: "web", Pod: "web-2", GitDigest: "gitea.test/p/web@" + digestA, RunningDigest: "gitea.test/p/web@" + digestB, Verdict: verdict.Mismatch},
			}},
			Record: &history.Record{
				Status: &status.App{ObservedAt: checked},
				Entries: []history.Entry{{Commit: commit1, Time: synced, Trigger: "auto", Result: history.Applied,
					Verified: false, Summary: "1 of 2 Pods run what Git pins"}},
			},
			Pulls: []gitforge.Pull{{Number: 7, Title: "promote web", URL: "http://gitea.test/platform/manifests/pulls/7"}},
		},
		{Name: "billing", Source: SourceArgoCD},
		{
			Name: "api",
			Status: &status.App{Repo: "file:///srv/git/api", Commit: commit1, Sync: status.Synced,
				Health: verdict.Healthy, Verified: true, Verification: "2 of 2 Pods verified"},
			Record: &history.Record{Entries: []history.Entry{{Commit: commit1, Time: synced}}},
		},
	}
}

func TestBuild(t *testing.T) {
	want := Page{Title: "pinbot", Refresh: 10, Generated: "2026-12-01T12:00:00Z", Apps: []AppView{
		{Name: "api", Href: "/apps/api", Source: "pinbot", Sync: "Synced", SyncClass: "ok", Health: "Healthy", HealthClass: "ok",
			Verified: true, Verification: "2 of 2 Pods verified", VerifyClass: "ok", Commit: Link{Text: "01234567"},
			Changed: "2026-12-01T11:58:00Z"},
		{Name: "billing", Href: "/apps/billing", Source: "argocd", Sync: "Unknown", SyncClass: "warn", Health: "Unknown",
			HealthClass: "warn", Verification: "not verified", VerifyClass: "warn"},
		{Name: "web", Href: "/apps/web", Source: "pinbot", Sync: "OutOfSync", SyncClass: "warn", Health: "Degraded",
			HealthClass: "bad", HealthReason: "Deployment/web: 1 of 2 updated", Verification: "1 of 2 Pods run what Git pins",
			VerifyClass: "bad",
			Commit:      Link{Text: "01234567", URL: "http://gitea.test/platform/manifests/commit/" + commit1},
			Changed:     "2026-12-01T11:59:00Z",
			Workloads: []WorkloadView{{Workload: "Deployment/web", Container: "web", Git: "sha256:aaaaaaaaaaaa", Pods: []PodView{
				{Pod: "web-1", Running: "sha256:aaaaaaaaaaaa", Verdict: "Verified"},
				{Pod: "web-2", Running: "sha256:bbbbbbbbbbbb", Verdict: "Mismatch", Mismatch: true},
			}}}},
	}}
	if diff := cmp.Diff(want, Build(fixtureApps(), now, 10*time.Second)); diff != "" {
		t.Errorf("Build (-want +got):\n%s", diff)
	}
}

func TestBuildApp(t *testing.T) {
	got := BuildApp(fixtureApps()[0], now, 0).Detail
	want := &DetailView{
		History: []EntryView{{Time: "2026-12-01T11:58:00Z", Trigger: "auto", Result: "Applied", ResultClass: "ok",
			Commit:  Link{Text: "01234567", URL: "http://gitea.test/platform/manifests/commit/" + commit1},
			Summary: "1 of 2 Pods run what Git pins"}},
		Pulls: []Link{{Text: "#7 promote web", URL: "http://gitea.test/platform/manifests/pulls/7"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("BuildApp detail (-want +got):\n%s", diff)
	}
}

func TestCommitLink(t *testing.T) {
	for _, tc := range []struct {
		name, repo, sha string
		want            Link
	}{
		{"gitea https", "https://gitea.test/o/r.git", commit1, Link{"01234567", "https://gitea.test/o/r/commit/" + commit1}},
		{"trailing slash", "http://gitea.test/o/r/", commit1, Link{"01234567", "http://gitea.test/o/r/commit/" + commit1}},
		{"credentials dropped", "https://u:p@gitea.test/o/r", commit1, Link{"01234567", "https://gitea.test/o/r/commit/" + commit1}},
		{"a chart version", "https://gitea.test/api/packages/o/helm", "0.2.0", Link{Text: "0.2.0"}},
		{"file repo", "file:///srv/r", commit1, Link{Text: "01234567"}},
		{"no commit", "https://gitea.test/o/r", "", Link{Text: "-"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, commitLink(tc.repo, tc.sha)); diff != "" {
				t.Errorf("commitLink(%q, %q) (-want +got):\n%s", tc.repo, tc.sha, diff)
			}
		})
	}
}

func TestUnsafePullURLIsNotLinked(t *testing.T) {
	a := App{Name: "x", Pulls: []gitforge.Pull{{Number: 1, Title: "t", URL: "javascript:alert(1)"}}}
	if got := BuildApp(a, now, 0).Detail.Pulls[0].URL; got != "" {
		t.Errorf("pull URL %q linked, want none", got)
	}
}
