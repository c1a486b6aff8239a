package deployer_test

import (
	"fmt"
	"log"

	"pinbot.dev/pinbot/reconciler/deployer"
	"pinbot.dev/pinbot/reconciler/verdict"
)

// The flow the reconciler follows for a verify-only Argo CD app: what the
// Application follows, what it deployed, whether its health counts, and
// the verdict of a container while Argo CD is behind the head.
func Example() {
	app, err := deployer.DecodeApplication([]byte(`{
	  "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
	  "metadata": {"name": "guestbook", "namespace": "argocd"},
	  "spec": {
	    "source": {"repoURL": "https://git.example/team/guestbook.git", "path": "deploy", "targetRevision": "main"},
	    "destination": {"server": "https://kubernetes.default.svc", "namespace": "web"}
	  },
	  "status": {
	    "reconciledAt": "2026-01-02T10:00:05Z",
	    "operationState": {"phase": "Succeeded", "startedAt": "2026-01-02T10:00:00Z", "finishedAt": "2026-01-02T10:00:04Z",
	      "syncResult": {"revision": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}},
	    "health": {"status": "Healthy"},
	    "resources": [{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": "web", "name": "guestbook"}]
	  }
	}`))
	if err != nil {
		log.Fatal(err)
	}
	src, err := app.Source()
	if err != nil {
		log.Fatal(err)
	}
	rev, err := app.Deployed(src)
	if err != nil {
		log.Fatal(err)
	}
	// The head of main, read from Git, has moved on.
	head := "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	atHead := rev.AtHead(head)
	j := deployer.Judge(src.Kind, head, atHead, deployer.Container{
		Head:     "sha256:2222222222222222222222222222222222222222222222222222222222222222",
		Deployed: "sha256:1111111111111111111111111111111111111111111111111111111111111111",
		Running:  "sha256:1111111111111111111111111111111111111111111111111111111111111111",
	})
	fmt.Println(src.RepoURL, src.Path, src.Ref, src.Namespace)
	fmt.Println("deployed", rev.Commit[:7], "at head:", atHead, "health counts:", app.Health().Counts)
	fmt.Println("workloads:", app.Workloads())
	fmt.Println(j.Verdict+":", j.Reason)
	fmt.Println("verified:", deployer.IsVerified(atHead, []verdict.Verdict{j.Verdict}))
	// Output:
	// https://git.example/team/guestbook.git deploy revision main web
	// deployed aaaaaaa at head: false health counts: true
	// workloads: [Deployment web/guestbook]
	// Pending: Argo CD has not synced bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb yet
	// verified: false
}
