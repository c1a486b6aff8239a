package promote

import (
	"context"
	"fmt"
	"testing"
	"time"

	"pinbot.dev/pinbot/promote/pr"
)

// TestRollbackReadiedThenOpened: a rollback readied during the readiness
// window pushes its branch and opens nothing; the rollback at the
// deadline is the same commit, so its push is a no-op and only the pull
// request opens. A readying never writes over a pull request open on the
// branch.
func TestRollbackReadiedThenOpened(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	app := f.image("app")
	v1 := f.pushImage(app, "v1", time.Time{})
	v2 := f.pushImage(app, "v2", time.Time{})
	f.createRepo(map[string]string{
		".pinbot.yaml": `environments:
  - name: staging
    paths: ["envs/staging/**"]
    apps: [web-staging]
`,
		"envs/staging/web.yaml": fmt.Sprintf("image: %s:v2@%s\n", app, v2),
	})
	merged := time.Date(2026, 12, 4, 19, 30, 0, 123, time.Local)
	req := func(ready bool) Request {
		return Request{
			Inputs: []Input{{Image: app, Tags: []string{"v1"}, Digest: v1, Source: pr.SourceRollback}},
			Target: "staging", AllowOlder: true, AllowTagMoved: true,
			Rollback: &Rollback{Failed: v2, Evidence: "not Ready", At: merged, Ready: ready},
		}
	}
	res, err := Run(ctx, f.env(), req(true))
	if err != nil || len(res) != 1 || res[0].Status != StatusReadied || res[0].Meta.Head == "" {
		t.Fatalf("readying: %v, %+v; want the branch readied", err, res)
	}
	readied := res[0]
	if !f.branchExists(readied.Branch) || len(f.openPulls()) != 0 {
		t.Fatalf("after readying: branch %s exists %v, %d pull requests; want the branch alone", readied.Branch, f.branchExists(readied.Branch), len(f.openPulls()))
	}
	res, err = Run(ctx, f.env(), req(false))
	if err != nil || len(res) != 1 || res[0].Status != StatusOpened || res[0].Pull == nil {
		t.Fatalf("the rollback: %v, %+v; want its pull request opened", err, res)
	}
	if res[0].Meta.Head != readied.Meta.Head || res[0].Pull.HeadSHA != readied.Meta.Head {
		t.Errorf("the rollback's head %s (pull request at %s), want the readied commit %s", res[0].Meta.Head, res[0].Pull.HeadSHA, readied.Meta.Head)
	}
	if res, err := Run(ctx, f.env(), req(true)); err != nil || len(res) != 1 || res[0].Status != StatusSkipped {
		t.Errorf("readying over the open rollback: %v, %+v; want it skipped", err, res)
	}
}
