package dashboard

import (
	"strings"
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
				{Workload: "Deployment/web", Container: "web", Pod: "web-1", GitDigest: "gitea.test/p/web@" + digestA, Tag: "v2", RunningDigest: "gitea.test/p/web@" + digestA, Verdict: verdict.Verified, Ready: true, Revision: "5", Node: "node-a"},
				{Workload: "Deployment/web", Container: "web", Pod: "web-2", GitDigest: "gitea.test/p/web@" + digestA, Tag: "v2", RunningDigest: "gitea.test/p/web@" + digestB, Verdict: verdict.Mismatch, Revision: "5", Node: "node-b"},
			}, OldRevisions: []verdict.ContainerVerdict{
				{Workload: "Deployment/web", Container: "web", Pod: "web-old-1", RunningDigest: "gitea.test/p/web@" + digestB, Verdict: verdict.Mismatch, Ready: true, Revision: "4", Node: "node-a"},
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

// TestBuild: apps grouped by release chain, in environment order, the
// apps of none last; versions beside digests; a Verified proof of a Pod
// that is not Ready says so; times relative, absolute on hover.
func TestBuild(t *testing.T) {
	apps := fixtureApps()
	apps[0].Repo, apps[0].Env, apps[0].Stage = "platform/manifests", "prod", 1
	apps[2].Repo, apps[2].Env, apps[2].Stage = "platform/manifests", "staging", 0
	p := Build(apps, now, 10*time.Second)
	var got []string
	for _, g := range p.Groups {
		var names []string
		for _, a := range g.Apps {
			names = append(names, a.Env+"/"+a.Name)
		}
		got = append(got, g.Repo+" "+g.Href+": "+strings.Join(names, ","))
	}
	want := []string{"platform/manifests /releases/platform/manifests: staging/api,prod/web", " : /billing"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("groups (-want +got):\n%s", diff)
	}
	web := p.Groups[0].Apps[1]
	if web.Proof != "Pending" || web.ProofClass != "warn" || web.Versions != "v2" || web.Ready != 1 || web.Pods != 2 || web.Old != 1 {
		t.Errorf("web: proof %q (%s), versions %q, %d/%d Ready, %d old; want Pending, v2, 1/2, 1 old", web.Proof, web.ProofClass, web.Versions, web.Ready, web.Pods, web.Old)
	}
	pods := web.Workloads[0].Pods
	if pods[1].Class != "bad" || !pods[1].Mismatch || pods[0].Class != "ok" || pods[0].Readiness != "Ready" {
		t.Errorf("web's Pods: %+v", pods)
	}
	if web.Changed != (Time{Abs: "2026-12-01T11:59:00Z", Rel: "1m ago"}) {
		t.Errorf("web changed %+v, want 1m ago", web.Changed)
	}
	api := p.Groups[0].Apps[0]
	if api.Proof != "Verified" || api.ProofClass != "ok" || api.Commit.Text != "01234567" {
		t.Errorf("api: %+v", api)
	}

	// The stuck rollout: the new Pod runs the right digest but is not
	// Ready, the old one still serves.
	notReady := now.Add(-3 * time.Minute)
	stuck := App{Name: "shop", Status: &status.App{Verified: true, Proof: verdict.Verified},
		Verification: &verdict.Verification{Verified: true,
			Containers:   []verdict.ContainerVerdict{{Workload: "Deployment/shop", Container: "app", Pod: "shop-new", GitDigest: digestB, RunningDigest: digestB, Verdict: verdict.Verified, Tag: "v3", Waiting: "", NotReadySince: &notReady, Revision: "7", Node: "node-a"}},
			OldRevisions: []verdict.ContainerVerdict{{Workload: "Deployment/shop", Container: "app", Pod: "shop-old", RunningDigest: digestA, Verdict: verdict.Mismatch, Ready: true, Revision: "6"}}}}
	v := Build([]App{stuck}, now, 0).Groups[0].Apps[0]
	if v.Proof != "Verified, 1 not Ready" || v.ProofClass != "warn" {
		t.Errorf("a Verified Pod that is not Ready shows as %q (%s)", v.Proof, v.ProofClass)
	}
	if p := v.Workloads[0].Pods[0]; p.Class != "warn" || p.Readiness != "not Ready for 3m" || p.Revision != "7" || p.Node != "node-a" {
		t.Errorf("the new Pod: %+v", p)
	}
	if v.Old != 1 || v.OldPods[0].Pod != "shop-old" || v.OldPods[0].Running != "sha256:aaaaaaaaaaaa" {
		t.Errorf("old Pods: %d %+v", v.Old, v.OldPods)
	}
}

func TestBuildApp(t *testing.T) {
	got := BuildApp(fixtureApps()[0], now, 0).Detail
	if got.App.Name != "web" {
		t.Errorf("detail of %q", got.App.Name)
	}
	wantHistory := []EntryView{{Time: Time{Abs: "2026-12-01T11:58:00Z", Rel: "2m ago"}, Trigger: "auto", Result: "Applied", ResultClass: "ok",
		Commit:  Link{Text: "01234567", URL: "http://gitea.test/platform/manifests/commit/" + commit1},
		Summary: "1 of 2 Pods run what Git pins"}}
	if diff := cmp.Diff(wantHistory, got.History); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]Link{{Text: "#7 promote web", URL: "http://gitea.test/platform/manifests/pulls/7"}}, got.Pulls); diff != "" {
		t.Errorf("pulls (-want +got):\n%s", diff)
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

// TestRollbacksAreListedApart: an app's page lists an open rollback under
// its own heading, never as a promotion, and marks a forced promotion.
func TestRollbacksAreListedApart(t *testing.T) {
	a := App{Name: "web-prod", Pulls: []gitforge.Pull{
		{Number: 6, Title: "promote 1.3.0", Head: "pinbot/prod/web"},
		{Number: 7, Title: "roll back to 1.2.0", Head: "pinbot/rollback/prod/web"},
		{Number: 8, Title: "promote 1.4.0", Head: "pinbot/forced/prod/web"},
	}}
	d := BuildApp(a, now, 0).Detail
	var pulls, rollbacks []string
	for _, l := range d.Pulls {
		pulls = append(pulls, l.Text)
	}
	for _, l := range d.Rollbacks {
		rollbacks = append(rollbacks, l.Text)
	}
	if diff := cmp.Diff([]string{"#6 promote 1.3.0", "#8 promote 1.4.0 (forced past the gate)"}, pulls); diff != "" {
		t.Errorf("promotions (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"#7 roll back to 1.2.0"}, rollbacks); diff != "" {
		t.Errorf("rollbacks (-want +got):\n%s", diff)
	}
}
