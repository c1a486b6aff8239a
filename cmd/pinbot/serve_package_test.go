package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"pinbot.dev/pinbot/internal/testenv/stack"
)

// TestServePackageEventOnFollower: Gitea's package webhook for a real
// image push reaches the follower of two `pinbot serve --leader-elect`
// replicas; the follower forwards it through the trigger ConfigMap, the
// leader promotes, and exactly one promotion pull request opens.
func TestServePackageEventOnFollower(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under testing.Short: needs bin/ peers (make tools)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const secret = "serve-package-s3cret"
	rig := newServeRig(ctx, t, stack.Options{Namespaces: []string{"pinbot-system", "web"}}, nil, secret)
	g, kube := rig.peers.Gitea, rig.peers.Kube
	image, v1 := rig.image("web", "v1")
	rig.createRepo("manifests", map[string]string{
		"app/web.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {image: %q}\n", image+":v1@"+v1),
	})
	tokenFile := rig.write("token", g.Token+"\n")
	rig.config(fmt.Sprintf("{url: %q, tokenFile: %q}", g.URL, tokenFile),
		fmt.Sprintf("promote:\n  - repo: %s/manifests\n    images: [%s]\n", g.AdminUser, image))
	start := func(id string) *replica { return rig.serve(id, "-v") }
	holder := rig.holder
	waitFor := rig.waitFor
	a, b := start("pkg-a"), start("pkg-b")
	byID := map[string]*replica{a.id: a, b.id: b}
	waitFor(60*time.Second, "a leader elected", func() bool { return byID[holder()] != nil })
	leader := byID[holder()]
	follower := a
	if leader == a {
		follower = b
	}
	waitFor(30*time.Second, "the follower serves", func() bool { return strings.Contains(follower.log.String(), "msg=serving") })

	// The package webhook of the image's owner points at the follower.
	gc, err := g.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := gc.CreateMyHook(sdk.CreateHookOption{
		Type:   sdk.HookTypeGitea,
		Config: map[string]string{"url": "http://" + follower.addr + "/webhook/gitea", "content_type": "json", "secret": secret},
		Events: []string{"package"},
		Active: true,
	}); err != nil {
		t.Fatal(err)
	}
	v2, err := g.PushRandomImage(image + ":v2")
	if err != nil {
		t.Fatal(err)
	}
	openPulls := func() []*sdk.PullRequest {
		gc, err := g.Client(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ps, _, err := gc.ListRepoPullRequests(g.AdminUser, "manifests", sdk.ListPullRequestsOptions{State: sdk.StateOpen})
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	waitFor(90*time.Second, "the promotion pull request of v2 opens", func() bool {
		ps := openPulls()
		return len(ps) > 0 && strings.Contains(ps[0].Body, v2)
	})
	waitFor(30*time.Second, "the leader logs the promotion", func() bool {
		return strings.Contains(leader.log.String(), `msg="promoted a pushed image"`)
	})
	if ps := openPulls(); len(ps) != 1 {
		t.Errorf("%d open pull requests, want 1", len(ps))
	}
	if l := leader.log.String(); !strings.Contains(l, "forwarded=true") {
		t.Errorf("the leader's promotion was not the forwarded one:\n%s", l)
	}
	if l := follower.log.String(); !strings.Contains(l, "forwarded to the leader") || strings.Contains(l, "opened") {
		t.Errorf("the follower did not forward the package event, or promoted itself:\n%s", l)
	}
	// Every replica's dashboard lists the open promotion pull request on
	// the app's page.
	pr := openPulls()[0]
	for _, ch := range []*replica{leader, follower} {
		resp, err := http.Get("http://" + ch.addr + "/apps/web")
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `href="`+pr.HTMLURL+`"`) {
			t.Errorf("the dashboard of %s (%s) does not link %s:\n%s", ch.id, resp.Status, pr.HTMLURL, page)
		}
	}
	trig, err := kube.CoreV1().ConfigMaps("pinbot-system").Get(ctx, "pinbot-trigger", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for k, v := range trig.Annotations {
		found = found || (strings.HasPrefix(k, "promote.pinbot.dev/") && strings.Contains(v, `"tag":"v2"`))
	}
	if !found {
		t.Errorf("the trigger ConfigMap holds no forwarded promotion of v2: %v", trig.Annotations)
	}
}
