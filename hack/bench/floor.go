package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The hand floors of issue 12: the same promotion done by hand, with the
// git CLI and one API call, timed step by step in the same run as pinbot,
// so a ratio to them is a ratio to what the forge itself costs.

// floorSteps are the steps of a hand promotion, in order.
var floorSteps = []string{"fetch", "edit", "commit", "push", "api"}

// handFloor promotes image 0 by hand into branch hand-floor: one pull
// request, opened by the first run and updated (body edited) by the next,
// as pinbot updates its own.
type handFloor struct {
	b      *promoteBench
	warm   string // the kept clone
	pull   int64  // the hand pull request, once opened
	steps  map[string][]time.Duration
	client *http.Client
}

func newHandFloor(ctx context.Context, b *promoteBench) (*handFloor, error) {
	h := &handFloor{b: b, warm: filepath.Join(b.tmp, "hand-warm"), steps: map[string][]time.Duration{},
		client: &http.Client{Timeout: time.Minute}}
	if err := h.git(ctx, "", "clone", "--quiet", "--depth", "1", "--single-branch", "--branch", "main",
		b.srv.RepoURL(b.owner, b.repo), h.warm); err != nil {
		return nil, err
	}
	return h, nil
}

// git runs git in dir with the admin's credentials in a header, so that
// no URL carries them.
func (h *handFloor) git(ctx context.Context, dir string, args ...string) error {
	return gitAs(ctx, dir, "hand", h.b.srv.AdminUser, h.b.srv.Token, args...)
}

// gitAs runs git in dir as author with user's token in a header, so that
// no URL carries it.
func gitAs(ctx context.Context, dir, author, user, token string, args ...string) error {
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + token))
	full := append([]string{"-c", "http.extraHeader=Authorization: Basic " + basic,
		"-c", "user.name=" + author, "-c", "user.email=" + author + "@bench.invalid"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %w\n%s", args[0], err, out)
	}
	return nil
}

// promote runs one hand promotion of image 0 from old to digest. With
// cold, it clones afresh (git clone --depth 1) instead of fetching into
// the kept clone. It returns the wall time.
func (h *handFloor) promote(ctx context.Context, old, digest string, cold bool) (time.Duration, error) {
	start := time.Now()
	mark := start
	step := func(name string) {
		now := time.Now()
		if !cold {
			h.steps[name] = append(h.steps[name], now.Sub(mark))
		}
		mark = now
	}
	dir := h.warm
	if cold {
		dir = filepath.Join(h.b.tmp, fmt.Sprintf("hand-cold-%d", time.Now().UnixNano()))
		defer os.RemoveAll(dir)
		if err := h.git(ctx, "", "clone", "--quiet", "--depth", "1", "--single-branch", "--branch", "main",
			h.b.srv.RepoURL(h.b.owner, h.b.repo), dir); err != nil {
			return 0, err
		}
	} else {
		if err := h.git(ctx, dir, "fetch", "--quiet", "--depth", "1", "origin", "main"); err != nil {
			return 0, err
		}
		if err := h.git(ctx, dir, "reset", "--quiet", "--hard", "FETCH_HEAD"); err != nil {
			return 0, err
		}
	}
	step("fetch")
	grep := exec.CommandContext(ctx, "git", "grep", "-l", "-F", old)
	grep.Dir = dir
	files, err := grep.Output()
	if err != nil {
		return 0, fmt.Errorf("git grep %s: %w", old, err)
	}
	for _, f := range strings.Fields(string(files)) {
		p := filepath.Join(dir, f)
		raw, err := os.ReadFile(p)
		if err != nil {
			return 0, err
		}
		if err := os.WriteFile(p, bytes.ReplaceAll(raw, []byte(old), []byte(digest)), 0o644); err != nil {
			return 0, err
		}
	}
	step("edit")
	if err := h.git(ctx, dir, "commit", "--quiet", "-a", "-m", "Promote svc000 to "+digest); err != nil {
		return 0, err
	}
	step("commit")
	if err := h.git(ctx, dir, "push", "--quiet", "--force", "origin", "HEAD:refs/heads/hand-floor"); err != nil {
		return 0, err
	}
	step("push")
	if err := h.api(ctx, digest); err != nil {
		return 0, err
	}
	step("api")
	return time.Since(start), nil
}

// api is the one API call: open the pull request, or edit its body.
func (h *handFloor) api(ctx context.Context, digest string) error {
	body := map[string]any{"body": "Promotes svc000 to " + digest}
	method, path := http.MethodPatch, fmt.Sprintf("/api/v1/repos/%s/%s/pulls/%d", h.b.owner, h.b.repo, h.pull)
	if h.pull == 0 {
		method, path = http.MethodPost, fmt.Sprintf("/api/v1/repos/%s/%s/pulls", h.b.owner, h.b.repo)
		body["title"], body["head"], body["base"] = "Promote svc000 (by hand)", "hand-floor", "main"
	}
	raw, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, method, h.b.srv.URL+path, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "token "+h.b.srv.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, out)
	}
	var pr struct {
		Number int64 `json:"number"`
	}
	if err := json.Unmarshal(out, &pr); err != nil {
		return fmt.Errorf("reading %s %s: %w", method, path, err)
	}
	h.pull = pr.Number
	return nil
}

// breakdown is the median of each step of the warm hand promotions.
func (h *handFloor) breakdown() string {
	var parts []string
	for _, s := range floorSteps {
		if ts := h.steps[s]; len(ts) > 0 {
			parts = append(parts, fmt.Sprintf("%s %v", s, promoteRound(promoteMedian(ts))))
		}
	}
	return strings.Join(parts, ", ")
}

// headAll is the drift floor's registry half: one token, then a HEAD of
// every image's :main, all at once, over one keep-alive client. It returns
// the wall time and the number of requests.
func (b *promoteBench) headAll(ctx context.Context) (time.Duration, int, error) {
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: len(b.images)}}
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+"/v2/token", nil)
	if err != nil {
		return 0, 0, err
	}
	req.SetBasicAuth(b.srv.AdminUser, b.srv.Token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("registry token: %w", err)
	}
	var tok struct {
		Token string `json:"token"`
	}
	err = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if err != nil || tok.Token == "" {
		return 0, 0, fmt.Errorf("registry token: HTTP %d: %v", resp.StatusCode, err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(b.images))
	for i, image := range b.images {
		wg.Go(func() {
			repo := strings.TrimPrefix(image, b.srv.RegistryHost+"/")
			req, err := http.NewRequestWithContext(ctx, http.MethodHead, b.srv.URL+"/v2/"+repo+"/manifests/main", nil)
			if err != nil {
				errs[i] = err
				return
			}
			req.Header.Set("Authorization", "Bearer "+tok.Token)
			req.Header.Set("Accept", "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json")
			resp, err := client.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Docker-Content-Digest") == "" {
				errs[i] = fmt.Errorf("HEAD %s:main: HTTP %d", image, resp.StatusCode)
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return 0, 0, err
		}
	}
	return took, 1 + len(b.images), nil
}
