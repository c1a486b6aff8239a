package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// offline is the demo's first step, which needs no Gitea: while Gitea
// compiles the first time, pinbot reads and rewrites a checkout's pins,
// resolving the new digest from a registry of its own (go-containerregistry's,
// on loopback, for this step only).
func (d *demo) offline(ctx context.Context) error {
	banner("pinbot on a checkout: every pin it finds, and the diff of a new digest (no Gitea needed)")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: registry.New(registry.Logger(discard())), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	host := ln.Addr().String()
	v1, err := pushRandom(ctx, host, "shop/web", "v1", "1.0.0", "")
	if err != nil {
		return err
	}
	v2, err := pushRandom(ctx, host, "shop/web", "v2", "2.0.0", "")
	if err != nil {
		return err
	}
	tree := filepath.Join(d.dir, "checkout")
	files := map[string]string{
		"deploy/web.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
        - name: web
          image: %s
`, v1.pinned()),
		"overlays/prod/kustomization.yaml": fmt.Sprintf(`resources: [../../deploy]
images:
  - name: %s
    newTag: v1
    digest: %s
`, v1.repo, v1.digest),
		"charts/web/values.yaml": fmt.Sprintf("image:\n  repository: %s\n  tag: v1\n  digest: %s\n", v1.repo, v1.digest),
	}
	if err := writeTree(tree, files); err != nil {
		return err
	}
	if _, err := d.run(ctx, "pins", "list", "--dir", tree); err != nil {
		return err
	}
	if _, err := d.run(ctx, "resolve", v2.repo+":v2"); err != nil {
		return err
	}
	_, err = d.run(ctx, "pins", "set", v2.repo+":v2@"+v2.digest, "--dir", tree, "--dry-run")
	return err
}

// writeTree writes files (slash path to content) under dir.
func writeTree(dir string, files map[string]string) error {
	for n, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}
