package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The hostile minute: a registry that answers every manifest with a
// 99 MB image index, pinned by fleetHostileApps Argo CD apps moved to a
// repository of their own (Argo CD says it synced them; their Pods still
// run the old digest, so each one's proof asks the registry whether that
// digest is a child of the pinned index), while push webhooks of the
// other apps' repository arrive at fleetWebhookRate a second, each a
// distinct delivery. The replicas must stay under their container's
// memory limit (fleetShape.container).
const (
	fleetHostileApps    = 100
	fleetWebhookRate    = 50
	fleetHostileWindow  = time.Minute
	hostileIndexEntries = 99_000 // about 99 MB of index
)

// hostileRegistry serves /v2/ and, for any manifest, an image index of
// hostileIndexEntries entries: announced by its Content-Length on a
// HEAD, streamed without one on a GET. It counts requests and bytes.
type hostileRegistry struct {
	requests, sent atomic.Int64
}

func (h *hostileRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.requests.Add(1)
	if r.URL.Path == "/v2/" || r.URL.Path == "/v2" {
		w.WriteHeader(http.StatusOK)
		return
	}
	if !strings.Contains(r.URL.Path, "/manifests/") {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
	w.Header().Set("Docker-Content-Digest", "sha256:"+strings.Repeat("ab", 32))
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Length", fmt.Sprint(hostileIndexEntries*1000))
		return
	}
	flusher, _ := w.(http.Flusher)
	write := func(s string) bool {
		n, err := w.Write([]byte(s))
		h.sent.Add(int64(n))
		return err == nil
	}
	if !write(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[`) {
		return
	}
	pad := strings.Repeat("x", 800)
	for i := range hostileIndexEntries {
		sum := sha256.Sum256([]byte(fmt.Sprint(i)))
		sep := ","
		if i == 0 {
			sep = ""
		}
		entry := fmt.Sprintf(`%s{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%x","size":1000,"platform":{"os":"linux","architecture":"arch%d"},"annotations":{"pad":%q}}`, sep, sum, i, pad)
		if !write(entry) {
			return
		}
		if i%1000 == 0 && flusher != nil {
			flusher.Flush()
		}
	}
	write(`]}`)
}

// hostile runs the hostile minute and reports each replica's peak RSS
// against the container limit.
func (b *fleetBench) hostile(ctx context.Context, r *report, at string) error {
	reg := &hostileRegistry{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: reg, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	ref := ln.Addr().String() + "/hostile/app@sha256:" + strings.Repeat("cd", 32)

	_, apps, err := b.hostileApps(ctx, ref)
	if err != nil {
		return err
	}
	began := time.Now()
	var peaks = make([]int64, len(b.replicas))
	sample := func() {
		for i, c := range b.replicas {
			select {
			case <-c.exited:
				continue
			default:
			}
			if rss, _, err := procMemory(c.cmd.Process.Pid); err == nil {
				peaks[i] = max(peaks[i], rss)
			}
		}
	}
	var live []string
	for i, c := range b.replicas {
		select {
		case <-c.exited:
		default:
			live = append(live, b.addrs[i])
		}
	}
	var sent, refused atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		tick := time.NewTicker(time.Second / fleetWebhookRate)
		defer tick.Stop()
		for k := 0; time.Since(began) < fleetHostileWindow; k++ {
			select {
			case <-gctx.Done():
				return gctx.Err()
			case <-tick.C:
			}
			go func() {
				if distinctPush(gctx, live[k%len(live)], k, b.commit, b.gitea.RepoURL(b.owner, "fleet")) != nil {
					refused.Add(1)
				}
				sent.Add(1)
			}()
		}
		return nil
	})
	g.Go(func() error {
		// The heap of each live replica well into the minute.
		select {
		case <-gctx.Done():
			return gctx.Err()
		case <-time.After(fleetHostileWindow * 3 / 4):
		}
		for i, c := range b.replicas {
			select {
			case <-c.exited:
			default:
				_ = saveHeap(b.pprofs[i], filepath.Join("hack", "bench", "out", b.shape.name+"-hostile-"+c.name+"-heap.pprof"))
			}
		}
		return nil
	})
	g.Go(func() error {
		for time.Since(began) < fleetHostileWindow+10*time.Second {
			sample()
			select {
			case <-gctx.Done():
				return gctx.Err()
			case <-time.After(250 * time.Millisecond):
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	var worst int64
	var each []string
	for i, c := range b.replicas {
		select {
		case <-c.exited:
			continue
		default:
		}
		worst = max(worst, peaks[i])
		each = append(each, c.name+" "+mb(peaks[i]))
	}
	fmt.Printf("   hostile minute: %d push webhooks (%d refused or failed) to the live replicas, %d apps pinning a 99 MB index; the registry got %d requests and sent %s\n",
		sent.Load(), refused.Load(), apps, reg.requests.Load(), mb(reg.sent.Load()))
	fmt.Printf("   peak RSS in the hostile minute: %s\n", strings.Join(each, ", "))
	r.check(at+"peak RSS, a 99 MB index and 50 webhooks/s, the largest replica", mb(worst), "≤ 300 MB", worst <= 300<<20)
	return nil
}

// distinctPush is postPush of delivery k: its body and delivery id are
// its own, so serve cannot drop it as a repeat.
func distinctPush(ctx context.Context, addr string, k int, sha, cloneURL string) error {
	body := fmt.Sprintf(`{"ref":"refs/heads/main","after":%q,"repository":{"clone_url":%q},"total_commits":%d}`, sha, cloneURL, k)
	code, err := sendHook(ctx, addr, fleetSecret, fmt.Sprintf("hostile-%d", k), body)
	// 202: apps passed; 200: none followed the branch or changed.
	if err == nil && code != http.StatusAccepted && code != http.StatusOK {
		err = fmt.Errorf("the webhook: %d", code)
	}
	return err
}

// hostileApps moves fleetHostileApps of the Argo CD apps to a repository
// of their own whose head pins ref, and marks their Applications synced
// to it, as Argo CD would after a sync whose rollout cannot pull the
// image: their Pods still run the old digest. It returns the commit and
// how many apps moved. The other apps' repository does not move.
func (b *fleetBench) hostileApps(ctx context.Context, ref string) (string, int, error) {
	const repo = "fleet-hostile"
	dir := filepath.Join(b.tmp, repo)
	var moved []int
	for i := 1; len(moved) < fleetHostileApps && i < b.shape.apps; i += 7 {
		if b.own(i) {
			continue
		}
		d := filepath.Join(dir, "apps", fleetName(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", 0, err
		}
		if err := os.WriteFile(filepath.Join(d, "deploy.yaml"), []byte(scaleDeploymentYAML(fleetName(i), ref)), 0o644); err != nil {
			return "", 0, err
		}
		moved = append(moved, i)
	}
	commit, err := b.gitea.CreateRepoFromDir(ctx, b.owner, repo, "main", dir)
	if err != nil {
		return "", 0, err
	}
	err = parallel(ctx, len(moved), 4, func(k int) error {
		i := moved[k]
		dest := map[string]any{"server": "https://kubernetes.default.svc", "namespace": b.namespace(i)}
		if c := b.clusterOf(i); c > 0 {
			dest = map[string]any{"name": fmt.Sprintf("spoke%d", c), "namespace": b.namespace(i)}
		}
		app := syncedApplication(fleetName(i), "bench=fleet", b.gitea.RepoURL(b.owner, repo), "apps/"+fleetName(i), dest, fleetName(i), commit)
		patch, err := json.Marshal(map[string]any{"spec": app.Object["spec"], "status": app.Object["status"]})
		if err != nil {
			return err
		}
		_, err = b.dyn.Resource(applicationsGVR).Namespace("argocd").Patch(ctx, fleetName(i), types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	return commit, len(moved), err
}
