package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// seed pushes v1 of the images and a manifest repository pinned to them.
func (d *demo) seed(ctx context.Context) error {
	banner("CI pushes v1; the manifest repository pins it by digest")
	web, err := d.build(ctx, "web", "v1", "1.0.0")
	if err != nil {
		return err
	}
	base, err := d.build(ctx, "base", "stable", "2026.11")
	if err != nil {
		return err
	}
	agent, err := d.build(ctx, "jenkins-agent", "lts", "3.0")
	if err != nil {
		return err
	}
	d.images["web"], d.images["base"], d.images["agent"] = web, base, agent

	tree := filepath.Join(d.dir, "seed")
	files := map[string]string{
		"envs/prod/namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n",
		"envs/prod/web.yaml": fmt.Sprintf(`# The web Deployment. pinbot owns the digest below; people own the rest.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: web
spec:
  replicas: 3
  strategy:
    rollingUpdate: {maxUnavailable: 0, maxSurge: 1}
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: %s   # promoted by pinbot
          args: ["--listen", ":8080"]
`, web.pinned()),
		"charts/web/values.yaml": fmt.Sprintf(`replicaCount: 2

image:
  repository: %s
  tag: v1
  digest: %s

service:
  port: 8080
`, web.repo, web.digest),
		"build/Dockerfile": fmt.Sprintf(`FROM %s AS build
RUN make

FROM build AS test
RUN make test
`, base.pinned()),
		"pins.yaml": fmt.Sprintf(`# Images the Jenkins build agents use, pinned by digest.
pins:
  jenkins-agent:
    image: %s
    tag: %s
    digest: %s
`, agent.repo, agent.tag, agent.digest),
	}
	if err := writeTree(tree, files); err != nil {
		return err
	}
	sha, err := d.gitea.CreateRepoFromDir(ctx, owner, repo, "main", tree)
	if err != nil {
		return err
	}
	fmt.Printf("created %s/%s at %.12s\n", owner, repo, sha)
	_, err = d.run(ctx, "pins", "list", "--dir", tree)
	return err
}

// promote builds v2, writes Kaniko's digest file and promotes it.
func (d *demo) promote(ctx context.Context) error {
	banner("CI builds v2 and writes Kaniko's --digest-file; pinbot promotes it")
	web, err := d.build(ctx, "web", "v2", "2.0.0")
	if err != nil {
		return err
	}
	digestFile := filepath.Join(d.dir, "digest")
	if err := os.WriteFile(digestFile, []byte(web.digest), 0o644); err != nil {
		return err
	}
	d.images["web"] = web
	args := append([]string{"promote", "--image", web.repo + ":v2", "--digest-file", digestFile}, d.forgeArgs()...)
	if _, err := d.run(ctx, args...); err != nil {
		return err
	}
	out, err := d.run(ctx, append(args, "-o", "json")...)
	if err != nil {
		return err
	}
	var res []struct {
		PRNumber int64 `json:"prNumber"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		var one struct {
			PRNumber int64 `json:"prNumber"`
		}
		if err2 := json.Unmarshal([]byte(out), &one); err2 != nil {
			return fmt.Errorf("reading promote's JSON: %w", err)
		}
		res = append(res, one)
	}
	if len(res) == 0 || res[0].PRNumber == 0 {
		return fmt.Errorf("promote opened no pull request")
	}
	d.pr = res[0].PRNumber
	fmt.Println("\n(Running the same promote again changed nothing: the pull request number stayed the same.)")
	return d.pullDiff(ctx, d.pr)
}

// drift moves the base image's tag and lets drift propose it.
func (d *demo) drift(ctx context.Context) error {
	banner("Someone pushes a new base:stable; pinbot drift notices the moved tag")
	if _, err := d.build(ctx, "base", "stable", "2026.12"); err != nil {
		return err
	}
	_, err := d.run(ctx, append([]string{"drift"}, d.forgeArgs()...)...)
	return err
}
