package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/internal/testenv/gitea"
)

func init() { register("promote", benchPromote) }

// The generated manifest repository of the issue: 2,000 files, 500 pins
// of 100 images, 20 promote runs.
const (
	promoteFiles  = 2000
	promotePins   = 500
	promoteImages = 100
	promoteRuns   = 20
	coldRuns      = 5 // more promotions, each fetching afresh (--cache-dir="")
	cloneRuns     = 5
	// The large repository: 20,000 files, the same 500 pins.
	largeFiles    = 20000
	largeColdRuns = 3
)

// benchPromote times `pinbot promote` (push to pull request) and `pinbot
// drift` as child processes against a real Gitea and its registry, with
// their peak RSS and CPU, each next to its hand floor measured in the same
// run (see floor.go): the git CLI and one API call for a promotion, plus
// one token and 100 concurrent HEADs for a drift.
func benchPromote(ctx context.Context, r *report) error {
	tmp, bin, done, err := workWithPinbot(ctx, "promote")
	if err != nil {
		return err
	}
	defer done()
	floor, err := runPeakRSS(exec.CommandContext(ctx, bin, "version"))
	if err != nil {
		return fmt.Errorf("pinbot version: %w", err)
	}
	fmt.Printf("   pinbot built static; pinbot version alone peaks at %s RSS\n", mb(floor))
	printIdleRSS(ctx, bin)
	fmt.Println("   starting Gitea")
	srv, err := gitea.Start(ctx, gitea.Options{})
	if err != nil {
		return fmt.Errorf("starting Gitea: %w", err)
	}
	defer srv.Stop()
	docker, err := srv.DockerConfig()
	if err != nil {
		return err
	}
	// pinbot keeps the base branch's clone in $XDG_CACHE_HOME/pinbot
	// between runs, as a Jenkins agent or a drift --schedule would.
	b := &promoteBench{srv: srv, bin: bin, tmp: tmp, owner: srv.AdminUser, repo: "manifests",
		env: append(os.Environ(), "DOCKER_CONFIG="+docker, "PINBOT_GITEA_TOKEN="+srv.Token,
			"XDG_CACHE_HOME="+filepath.Join(tmp, "cache"))}

	started := time.Now()
	if err := b.setUp(ctx); err != nil {
		return err
	}
	fmt.Printf("   repository: %d files, %d pins of %d images (each tracking :main), in Gitea %s; set up in %v\n",
		promoteFiles, promotePins, promoteImages, srv.Version, time.Since(started).Round(time.Second))

	clone, err := b.cloneBaseline(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("   baseline: git clone --depth 1 of the repository, median of %d: %v\n", cloneRuns, promoteRound(clone))
	if b.hand, err = newHandFloor(ctx, b); err != nil {
		return err
	}

	if err := b.promotes(ctx, r, clone); err != nil {
		return err
	}
	if err := b.drift(ctx, r, clone, 1); err != nil {
		return err
	}
	if err := b.drift(ctx, r, clone, 20); err != nil {
		return err
	}
	return b.large(ctx, r)
}

type promoteBench struct {
	srv         *gitea.Server
	bin, tmp    string
	owner, repo string
	env         []string
	images      []string      // repositories; image i's :main is pinned
	digests     []string      // image i's :main when the repository was made
	moved       int           // images whose :main moved so far (1..moved)
	cpu         time.Duration // CPU time of the last run
	stderr      string        // of the last run
	hand        *handFloor
	files       int                        // files of the repository; promoteFiles when 0
	first       v1.Image                   // image 0's :main when the repository was made
	warmFloor   time.Duration              // p50 of the warm hand promotions
	forgeArgs   []string                   // more pinbot flags (--ca-file)
	pull        int64                      // the promotions' pull request
	firstLog    string                     // the first promotion's steps (see phases)
	warmLog     string                     // the last warm one's
	warmSteps   map[string][]time.Duration // the warm runs' steps by name
	pushOpts    []remote.Option            // more options for pushing test images
}

func (b *promoteBench) image(i int) string {
	return fmt.Sprintf("%s/%s/svc%03d", b.srv.RegistryHost, b.owner, i)
}

// push pushes a new random image to ref and returns its digest.
func (b *promoteBench) push(ref string) (string, error) {
	img, err := random.Image(512, 1)
	if err != nil {
		return "", err
	}
	return b.write(ref, img)
}

func (b *promoteBench) write(ref string, img v1.Image) (string, error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return "", err
	}
	opts := append([]remote.Option{remote.WithAuth(&authn.Basic{Username: b.srv.AdminUser, Password: b.srv.Token})}, b.pushOpts...)
	if err := remote.Write(r, img, opts...); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := img.Digest()
	return d.String(), err
}

// pushMain pushes a new build of image 0 as its :main, the tag its pins
// track, and returns its digest: what CI does before it promotes.
func (b *promoteBench) pushMain() (string, error) { return b.push(b.images[0] + ":main") }

// restoreMain points image 0's :main back at the repository's pin, so
// that drift finds only the tags it moves itself.
func (b *promoteBench) restoreMain() error {
	_, err := b.write(b.images[0]+":main", b.first)
	return err
}

// setUp pushes the images and creates the repository: 500 files with one
// pin each (Deployments, Helm values and kustomizations, five pins per
// image) and 1,500 files without pins.
func (b *promoteBench) setUp(ctx context.Context) error {
	digests := make([]string, promoteImages)
	b.digests = digests
	for i := range digests {
		b.images = append(b.images, b.image(i))
		img, err := random.Image(512, 1)
		if err != nil {
			return err
		}
		if i == 0 {
			b.first = img
		}
		if digests[i], err = b.write(b.image(i)+":main", img); err != nil {
			return err
		}
	}
	files := b.files
	if files == 0 {
		files = promoteFiles
	}
	dir := filepath.Join(b.tmp, "tree")
	for f := 0; f < files; f++ {
		env := []string{"dev", "staging", "prod", "qa"}[f%4]
		var path, content string
		switch {
		case f < promotePins && f%10 == 9:
			i := f % promoteImages
			path = fmt.Sprintf("envs/%s/svc%03d/values-%d.yaml", env, i, f)
			content = fmt.Sprintf("replicaCount: 2\nimage:\n  repository: %s\n  tag: main\n  digest: %s\nresources: {}\n", b.images[i], digests[i])
		case f < promotePins && f%10 == 8:
			i := f % promoteImages
			path = fmt.Sprintf("envs/%s/svc%03d/k%d/kustomization.yaml", env, i, f)
			content = fmt.Sprintf("resources: [deployment.yaml]\nimages:\n  - name: svc\n    newName: %s\n    newTag: main\n    digest: %s\n", b.images[i], digests[i])
		case f < promotePins:
			i := f % promoteImages
			path = fmt.Sprintf("envs/%s/svc%03d/deployment-%d.yaml", env, i, f)
			content = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: svc%03d-%d
  labels: {app: svc%03d}
spec:
  replicas: 2
  selector:
    matchLabels: {app: svc%03d}
  template:
    metadata:
      labels: {app: svc%03d}
    spec:
      containers:
        - name: app
          image: %s:main@%s
          ports: [{containerPort: 8080}]
`, i, f, i, i, i, b.images[i], digests[i])
		default:
			path = fmt.Sprintf("envs/%s/config/cm-%04d.yaml", env, f)
			content = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%04d\ndata:\n  LOG_LEVEL: info\n  FEATURE_%d: \"on\"\n", f, f)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, path)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, path), []byte(content), 0o644); err != nil {
			return err
		}
	}
	_, err := b.srv.CreateRepoFromDir(ctx, b.owner, b.repo, "main", dir)
	return err
}

// cloneBaseline is the median time of a plain shallow git clone.
func (b *promoteBench) cloneBaseline(ctx context.Context) (time.Duration, error) {
	var ts []time.Duration
	for i := range cloneRuns {
		dst := filepath.Join(b.tmp, fmt.Sprintf("clone-%d", i))
		cmd := exec.CommandContext(ctx, "git", "clone", "--quiet", "--depth", "1", "--single-branch", "--branch", "main",
			b.srv.RepoURL(b.owner, b.repo), dst)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("git clone: %w\n%s", err, out)
		}
		ts = append(ts, time.Since(start))
		os.RemoveAll(dst)
	}
	return promoteMedian(ts), nil
}

// run runs bin/pinbot with the forge flags and returns stdout, the wall
// time and the peak RSS. It adds the child's CPU time (user and system) to
// b.cpu: what pinbot itself spent, apart from waiting on Gitea.
func (b *promoteBench) run(ctx context.Context, args ...string) ([]byte, time.Duration, int64, error) {
	args = append(args, "--forge-url", b.srv.URL, "--repo", b.owner+"/"+b.repo, "-o", "json")
	args = append(args, b.forgeArgs...)
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Env = b.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	peak, err := runPeakRSS(cmd)
	d := time.Since(start)
	if err != nil {
		return nil, d, 0, fmt.Errorf("pinbot %s: %w\n%s", args[0], err, errOut.String())
	}
	b.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	b.stderr = errOut.String()
	return out.Bytes(), d, peak, nil
}

// promoteOnce promotes digest d of image 0's :main (run i of a series)
// and checks the result: the first run opens the pull request, the
// others update it, each changing image 0's five pins. It returns the
// pull request's number, the wall time and the peak RSS.
func (b *promoteBench) promoteOnce(ctx context.Context, d string, i int, extra ...string) (int64, time.Duration, int64, error) {
	digestFile := filepath.Join(b.tmp, "digest")
	if err := os.WriteFile(digestFile, []byte(d+"\n"), 0o644); err != nil {
		return 0, 0, 0, err
	}
	args := append([]string{"promote", "--digest-file", digestFile, "--image", b.images[0] + ":main"}, extra...)
	args = append(args, "-v") // the steps' times, kept for the breakdowns
	started := time.Now()
	out, took, peak, err := b.run(ctx, args...)
	if err != nil {
		return 0, 0, 0, err
	}
	switch {
	case i == 0:
		b.firstLog = phases(b.stderr, started)
	case i < promoteRuns && b.warmSteps != nil:
		b.warmLog = phases(b.stderr, started)
		for _, line := range strings.Split(b.stderr, "\n") {
			if d, err := time.ParseDuration(logField(line, "took")); err == nil {
				b.warmSteps[logField(line, "msg")] = append(b.warmSteps[logField(line, "msg")], d)
			}
		}
	}
	var res struct {
		PRNumber int64  `json:"prNumber"`
		Status   string `json:"status"`
		Changes  []any  `json:"changes"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return 0, 0, 0, fmt.Errorf("reading promote -o json: %w: %s", err, out)
	}
	want := "updated"
	if i == 0 {
		want, b.pull = "opened", res.PRNumber
	}
	if res.Status != want || res.PRNumber != b.pull || len(res.Changes) != promotePins/promoteImages {
		return 0, 0, 0, fmt.Errorf("promote run %d: %s #%d with %d changes; want %s #%d with %d", i, res.Status, res.PRNumber, len(res.Changes), want, b.pull, promotePins/promoteImages)
	}
	return res.PRNumber, took, peak, nil
}

// promotes pushes a new build of image 0's :main before each run
// (untimed), then times `pinbot promote --digest-file` from start to the
// pull request: promoteRuns runs with the object cache (the first one
// fills it), then coldRuns without; each next to a hand promotion of the
// same digest.
func (b *promoteBench) promotes(ctx context.Context, r *report, clone time.Duration) error {
	b.warmSteps = map[string][]time.Duration{}
	var warm, cold, cpu, handWarm, handCold []time.Duration
	var rss int64
	for i := range promoteRuns + coldRuns {
		d, err := b.pushMain()
		if err != nil {
			return err
		}
		var extra []string
		if i >= promoteRuns {
			extra = append(extra, "--cache-dir=")
		}
		_, took, peak, err := b.promoteOnce(ctx, d, i, extra...)
		if err != nil {
			return err
		}
		rss = max(rss, peak)
		hand, err := b.hand.promote(ctx, b.digests[0], d, i >= promoteRuns)
		if err != nil {
			return fmt.Errorf("hand promotion %d: %w", i, err)
		}
		if i < promoteRuns {
			warm = append(warm, took)
			cpu = append(cpu, b.cpu)
			handWarm = append(handWarm, hand)
		} else {
			cold = append(cold, took)
			handCold = append(handCold, hand)
		}
	}
	if err := b.restoreMain(); err != nil {
		return err
	}
	slices.Sort(warm)
	p50, p90 := warm[len(warm)/2], warm[len(warm)*9/10]
	coldP50 := promoteMedian(cold)
	b.warmFloor = promoteMedian(handWarm)
	coldFloor := promoteMedian(handCold)
	cpuP50 := promoteMedian(cpu)
	fmt.Printf("   the first promotion's steps (-v; each: its time, and when it ended since the process started): %s\n", b.firstLog)
	fmt.Printf("   the last warm promotion's steps: %s\n", b.warmLog)
	var steps []string
	for _, name := range []string{"found the default branch", "verified digest", "fetched", "scanned pins", "rewrote pins", "committed", "pushed", "read the base head", "published"} {
		if ts := b.warmSteps[name]; len(ts) > 0 {
			steps = append(steps, fmt.Sprintf("%s %v", name, promoteRound(promoteMedian(ts))))
		}
	}
	fmt.Printf("   pinbot's warm steps, p50 of %d runs: %s\n", promoteRuns-1, strings.Join(steps, ", "))
	fmt.Printf("   promote (push to pull request, %d runs): p50 %v, p90 %v, min %v, max %v (the first filled the object cache)\n",
		promoteRuns, promoteRound(p50), promoteRound(p90), promoteRound(warm[0]), promoteRound(warm[len(warm)-1]))
	fmt.Printf("   hand floor, each run right after pinbot's (git fetch --depth 1 + reset --hard, git grep + edit, commit, push, one API call): p50 %v\n",
		promoteRound(b.warmFloor))
	fmt.Printf("     its steps, p50: %s\n", b.hand.breakdown())
	fmt.Printf("   promote without the object cache (%d runs): p50 %v; hand floor with git clone --depth 1: p50 %v\n",
		coldRuns, promoteRound(coldP50), promoteRound(coldFloor))
	fmt.Printf("   pinbot's own CPU time per warm promote (user+system of the child), p50: %v; the rest is waiting on Gitea\n", promoteRound(cpuP50))
	r.check("promote p50, warm cache", fmt.Sprintf("%v (%s of hand %v)", promoteRound(p50), ratio(p50, b.warmFloor), promoteRound(b.warmFloor)),
		"<= 0.8x", float64(p50) <= 0.8*float64(b.warmFloor))
	r.check("promote p50, no cache", fmt.Sprintf("%v (%s of hand %v)", promoteRound(coldP50), ratio(coldP50, coldFloor), promoteRound(coldFloor)),
		"<= 0.8x", float64(coldP50) <= 0.8*float64(coldFloor)) // issue 39: warm and cold
	r.check("promote p90, warm cache", fmt.Sprintf("%v (%s of git clone)", promoteRound(p90), ratio(p90, clone)), "reported", true)
	r.check("pinbot CPU per warm promote", promoteRound(cpuP50).String(), "<= 150ms", cpuP50 <= 150*time.Millisecond)
	r.check("promote peak RSS", mb(rss), "<= 80 MB", rss <= 80<<20)
	return nil
}

// drift moves :main of n more images, then times one `pinbot drift` over
// all tracked tags, which must open n pull requests, counting the registry
// requests it makes (its -v log has a line per request). With one moved,
// it is checked against the hand floor: one token and a HEAD of every
// tag, all at once, plus the warm hand promotion.
func (b *promoteBench) drift(ctx context.Context, r *report, clone time.Duration, n int) error {
	for i := b.moved + 1; i <= b.moved+n; i++ {
		if _, err := b.push(b.images[i] + ":main"); err != nil {
			return err
		}
	}
	b.moved += n
	out, took, rss, err := b.run(ctx, "drift", "-v")
	if err != nil {
		return err
	}
	var rep struct {
		Checked int    `json:"checked"`
		Summary string `json:"summary"`
		Results []struct {
			Status string `json:"status"`
		} `json:"results"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return fmt.Errorf("reading drift -o json: %w: %s", err, out)
	}
	opened := 0
	for _, res := range rep.Results {
		if res.Status == "opened" {
			opened++
		}
	}
	if rep.Checked != promoteImages || opened != n {
		return fmt.Errorf("drift with %d moved tags: %s", n, rep.Summary)
	}
	requests := strings.Count(b.stderr, `msg="registry request"`)
	if n == 1 {
		fmt.Printf("   drift's steps (-v): %s\n", phases(b.stderr, time.Now().Add(-took)))
	}
	fmt.Printf("   drift, %d tags checked, %d moved: %v (pinbot CPU %v, %d registry requests), %s\n",
		rep.Checked, n, promoteRound(took), promoteRound(b.cpu), requests, rep.Summary)
	name := fmt.Sprintf("drift, %d moved of %d tags (%d PRs)", n, promoteImages, n)
	if n == 1 {
		var heads []time.Duration
		for range 3 {
			d, _, err := b.headAll(ctx)
			if err != nil {
				return err
			}
			heads = append(heads, d)
		}
		head := promoteMedian(heads)
		floor := head + b.warmFloor
		fmt.Printf("   drift hand floor: token + %d concurrent HEADs (median of 3) %v + warm hand promotion %v = %v\n",
			len(b.images), promoteRound(head), promoteRound(b.warmFloor), promoteRound(floor))
		r.check(name, fmt.Sprintf("%v (%s of hand %v)", promoteRound(took), ratio(took, floor), promoteRound(floor)),
			"<= 1.25x", float64(took) <= 1.25*float64(floor))
		r.check(fmt.Sprintf("registry requests, drift of %d tags", rep.Checked), fmt.Sprint(requests), "<= 110", requests <= 110)
	} else {
		r.check(name, fmt.Sprintf("%v (%s of git clone)", promoteRound(took), ratio(took, clone)), "reported", true)
	}
	r.check(name+" peak RSS", mb(rss), "<= 80 MB", rss <= 80<<20)
	return nil
}

func promoteMedian(ts []time.Duration) time.Duration {
	s := slices.Clone(ts)
	slices.Sort(s)
	return s[len(s)/2]
}

func promoteRound(d time.Duration) time.Duration {
	if d > 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
