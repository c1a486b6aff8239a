package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// pushed is an image the demo's "CI" pushed.
type pushed struct {
	repo   string // host/owner/name
	tag    string
	digest string
}

func (p pushed) pinned() string { return p.repo + ":" + p.tag + "@" + p.digest }
func (p pushed) short() string  { return p.digest[:19] }

// build pushes a fresh random linux/amd64 image to the Gitea registry as
// owner/name:tag and owner/name:version, labelled as a CI build of version
// would be. The version tag keeps the image in Gitea's registry after tag
// moves on.
func (d *demo) build(ctx context.Context, imageName, tag, version string) (pushed, error) {
	auth := remote.WithAuth(&authn.Basic{Username: d.gitea.AdminUser, Password: d.gitea.Token})
	return pushRandom(ctx, d.gitea.RegistryHost, owner+"/"+imageName, tag, version, d.gitea.URL+"/"+owner+"/"+imageName, auth)
}

// pushRandom pushes a fresh random linux/amd64 image to host/path as tag
// and version, labelled with its version and source.
func pushRandom(ctx context.Context, host, path, tag, version, source string, opts ...remote.Option) (pushed, error) {
	img, err := random.Image(512, 2)
	if err != nil {
		return pushed{}, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return pushed{}, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Created = v1.Time{Time: time.Now().UTC().Truncate(time.Second)}
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.revision": revision(),
		"org.opencontainers.image.version":  version,
	}
	if source != "" {
		cfg.Config.Labels["org.opencontainers.image.source"] = source
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return pushed{}, err
	}
	p := pushed{repo: host + "/" + path, tag: tag}
	for _, t := range []string{version, tag} {
		ref, err := name.ParseReference(p.repo+":"+t, name.Insecure)
		if err != nil {
			return pushed{}, err
		}
		if err := remote.Write(ref, img, append(opts, remote.WithContext(ctx))...); err != nil {
			return pushed{}, fmt.Errorf("pushing %s: %w", ref, err)
		}
	}
	dg, err := img.Digest()
	if err != nil {
		return pushed{}, err
	}
	p.digest = dg.String()
	fmt.Printf("pushed %s:%s  %s  (version %s)\n", p.repo, tag, p.short(), version)
	return p, nil
}

// discard is a logger that drops everything.
func discard() *log.Logger { return log.New(io.Discard, "", 0) }

// revision makes up a source commit for an image's labels.
func revision() string {
	b := make([]byte, 20)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
