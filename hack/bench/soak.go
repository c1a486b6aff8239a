package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sync/errgroup"

	"pinbot.dev/pinbot/gitforge"
	"pinbot.dev/pinbot/promote"
	"pinbot.dev/pinbot/promote/pr"
)

func init() { register("soak", benchSoak) }

// The soak of issue 13: 500 promotions of 20 images, 10 at a time, then
// 2,000 reconcile passes over 20 apps.
const (
	soakImages      = 20
	soakPromotions  = 500
	soakParallel    = 10
	soakApps        = 20
	soakPasses      = 2000
	soakWarmPasses  = soakPasses / 10 // passes before the baseline is read
	soakGoroutineUp = 10              // goroutines the count may grow by and stay flat
)

// benchSoak runs both soaks on one control plane and Gitea.
func benchSoak(ctx context.Context, r *report) error {
	tmp, err := os.MkdirTemp("", "pinbot-bench-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b := &recBench{tmp: tmp, bin: filepath.Join(tmp, "pinbot")}
	started := time.Now()
	stop, err := b.start(ctx)
	defer stop()
	if err != nil {
		return err
	}
	fmt.Printf("   control plane, Gitea %s and a simulated node up in %v\n", b.gitea.Version, time.Since(started).Round(100*time.Millisecond))
	if err := b.soakPromote(ctx, r); err != nil {
		return err
	}
	return b.soakReconcile(ctx, r)
}

// soakPromote pushes soakPromotions/soakImages builds of each image, tags
// 1, 2, ... in that order, then runs one promotion per build, soakParallel
// at a time, in the order the builds were pushed, then promotes an older
// build of each image late. It checks that the late ones are superseded
// and that exactly one pull request per image is open, proposing the
// image's newest build.
func (b *recBench) soakPromote(ctx context.Context, r *report) error {
	const repo = "soak-manifests"
	builds := soakPromotions / soakImages
	image := func(i int) string { return fmt.Sprintf("%s/%s/soak%02d", b.gitea.RegistryHost, b.owner, i) }
	type build struct {
		image, tag, digest string
	}
	var queue []build
	newest := map[string]string{}
	files := map[string]string{}
	for i := range soakImages {
		refs, err := b.pushImages(fmt.Sprintf("soak%02d", i), 1)
		if err != nil {
			return err
		}
		files[fmt.Sprintf("apps/soak%02d/deploy.yaml", i)] = recDeployment(fmt.Sprintf("soak%02d", i), 1, refs[0])
	}
	start := time.Now()
	for k := 1; k <= builds; k++ {
		for i := range soakImages {
			d, err := b.pushSoakImage(image(i), fmt.Sprint(k))
			if err != nil {
				return err
			}
			queue = append(queue, build{image(i), fmt.Sprint(k), d})
			newest[image(i)] = d
		}
	}
	fmt.Printf("   pushed %d builds of %d images in %v\n", len(queue), soakImages, time.Since(start).Round(100*time.Millisecond))
	if err := b.gitea.CreateRepo(ctx, b.owner, repo, "main"); err != nil {
		return err
	}
	if _, err := b.push(ctx, repo, files); err != nil {
		return err
	}
	forge, err := gitforge.NewGitea(b.gitea.URL, b.gitea.Token)
	if err != nil {
		return err
	}
	env := promote.Env{
		Forge: forge, Registry: b.reg,
		Repo:     gitforge.Repo{Owner: b.owner, Name: repo},
		CloneURL: b.gitea.RepoURL(b.owner, repo),
		Auth:     gitforge.Auth{Token: b.gitea.Token},
		Base:     "main",
	}

	statuses := map[promote.Status]int{}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(soakParallel)
	start = time.Now()
	for _, p := range queue {
		g.Go(func() error {
			res, err := promote.Run(gctx, env, promote.Request{Inputs: []promote.Input{{
				Image: p.image, Tags: []string{p.tag}, Digest: p.digest, Source: pr.SourceFlag,
			}}})
			if err != nil {
				return fmt.Errorf("promoting %s:%s: %w", p.image, p.tag, err)
			}
			mu.Lock()
			for _, res := range res {
				statuses[res.Status]++
			}
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	took := time.Since(start)
	// Late builds: build builds/2 of each image finishes now, after the
	// newest was promoted. Each must be superseded.
	late := 0
	for _, p := range queue[(builds/2-1)*soakImages : builds/2*soakImages] {
		res, err := promote.Run(ctx, env, promote.Request{Inputs: []promote.Input{{
			Image: p.image, Tags: []string{p.tag}, Digest: p.digest, Source: pr.SourceFlag,
		}}})
		if err != nil {
			return fmt.Errorf("promoting the late %s:%s: %w", p.image, p.tag, err)
		}
		if len(res) == 1 && res[0].Status == promote.StatusSuperseded {
			late++
		}
	}
	prs, err := forge.ListPulls(ctx, env.Repo, gitforge.StateOpen)
	if err != nil {
		return err
	}
	right := 0
	var wrong []string
	for _, pull := range prs {
		m, err := pr.ParseBody(pull.Body)
		switch {
		case err != nil:
			wrong = append(wrong, fmt.Sprintf("#%d: %s", pull.Number, err))
		case len(m.Images) == 1 && newest[m.Images[0].Image] == m.Images[0].Digest:
			right++
		default:
			wrong = append(wrong, fmt.Sprintf("#%d proposes %s:%s", pull.Number, m.Images[0].Image, m.Images[0].Tag))
		}
	}
	var counts []string
	for _, s := range []promote.Status{promote.StatusOpened, promote.StatusUpdated, promote.StatusUnchanged, promote.StatusSuperseded} {
		counts = append(counts, fmt.Sprintf("%s %d", s, statuses[s]))
	}
	fmt.Printf("   %d promotions, %d at a time, in %v (%v each): %s\n", len(queue), soakParallel, took.Round(100*time.Millisecond),
		(took / time.Duration(len(queue))).Round(time.Millisecond), strings.Join(counts, ", "))
	if len(wrong) > 0 {
		fmt.Printf("   pull requests not on their image's newest build: %s\n", strings.Join(wrong, "; "))
	}
	r.check("soak: late builds superseded", fmt.Sprintf("%d of %d", late, soakImages), fmt.Sprintf("%d of %d", soakImages, soakImages), late == soakImages)
	r.check(fmt.Sprintf("soak: %d promotions, open PRs on the newest build", len(queue)),
		fmt.Sprintf("%d of %d open", right, len(prs)), fmt.Sprintf("%d of %d", soakImages, soakImages),
		right == soakImages && len(prs) == soakImages)
	return nil
}

// pushSoakImage pushes a new random image as repo:tag and returns its
// digest.
func (b *recBench) pushSoakImage(repo, tag string) (string, error) {
	img, err := random.Image(256, 1)
	if err != nil {
		return "", err
	}
	ref, err := name.ParseReference(repo+":"+tag, name.Insecure)
	if err != nil {
		return "", err
	}
	if err := remote.Write(ref, img, remote.WithAuth(&authn.Basic{Username: b.gitea.AdminUser, Password: b.gitea.Token})); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := img.Digest()
	return d.String(), err
}

// soakReconcile runs soakPasses passes over soakApps apps, 20 apps side by
// side, and compares the goroutine count and the live heap after the
// warm-up with those at the end.
func (b *recBench) soakReconcile(ctx context.Context, r *report) error {
	var apps []recApp
	var names []string
	for i := range soakApps {
		a := recApp{name: fmt.Sprintf("soak-app-%02d", i), automated: true}
		apps, names = append(apps, a), append(names, a.name)
	}
	if err := b.namespaces(ctx, names...); err != nil {
		return err
	}
	for _, n := range names {
		if err := b.gitea.CreateRepo(ctx, b.owner, n, "main"); err != nil {
			return err
		}
		if _, err := b.push(ctx, n, map[string]string{"app/settings.yaml": recConfigMap("settings", 1), "app/more.yaml": recConfigMap("more", 2)}); err != nil {
			return err
		}
	}
	rec, _, err := b.open("soak.yaml", time.Hour, apps...)
	if err != nil {
		return err
	}
	defer rec.Close()

	type sample struct {
		goroutines int
		heap       uint64
	}
	measure := func() sample {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return sample{runtime.NumGoroutine(), ms.HeapAlloc}
	}
	perApp := soakPasses / soakApps
	run := func(from, to int) error {
		g, gctx := errgroup.WithContext(ctx)
		for _, n := range names {
			g.Go(func() error {
				for range to - from {
					if _, _, err := rec.Sync(gctx, n, 0); err != nil {
						return fmt.Errorf("syncing %s: %w", n, err)
					}
				}
				return nil
			})
		}
		return g.Wait()
	}
	start := time.Now()
	warm := soakWarmPasses / soakApps
	if err := run(0, warm); err != nil {
		return err
	}
	before := measure()
	if err := run(warm, perApp); err != nil {
		return err
	}
	took := time.Since(start)
	after := measure()
	fmt.Printf("   %d passes over %d apps in %v (%v each, %d apps side by side)\n", soakPasses, soakApps, took.Round(100*time.Millisecond),
		(took / soakPasses).Round(time.Millisecond), soakApps)
	fmt.Printf("   after %d passes: %d goroutines, heap %s; after %d: %d goroutines, heap %s\n",
		soakWarmPasses, before.goroutines, mb(int64(before.heap)), soakPasses, after.goroutines, mb(int64(after.heap)))
	r.check(fmt.Sprintf("soak: goroutines, pass %d -> %d", soakWarmPasses, soakPasses), fmt.Sprintf("%d -> %d", before.goroutines, after.goroutines),
		fmt.Sprintf("<= +%d", soakGoroutineUp), after.goroutines <= before.goroutines+soakGoroutineUp)
	heapOK := after.heap <= before.heap+before.heap/2+4<<20
	r.check(fmt.Sprintf("soak: live heap, pass %d -> %d", soakWarmPasses, soakPasses), fmt.Sprintf("%s -> %s", mb(int64(before.heap)), mb(int64(after.heap))),
		"<= 1.5x + 4 MB", heapOK)
	return nil
}
