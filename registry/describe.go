package registry

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"

	"pinbot.dev/pinbot/internal/imageref"
)

// OCI annotation and label keys Describe reads.
const (
	keyCreated  = "org.opencontainers.image.created"
	keyRevision = "org.opencontainers.image.revision"
	keySource   = "org.opencontainers.image.source"
	keyVersion  = "org.opencontainers.image.version"
)

// Child is the image an index holds for one platform.
type Child struct {
	Platform  imageref.Platform `json:"platform"`
	Digest    string            `json:"digest"`
	MediaType string            `json:"mediaType"`
	Size      int64             `json:"size"` // bytes of the child's manifest, as the index records it
}

// Image is what Describe learns about a reference.
type Image struct {
	Reference  string `json:"reference"`  // normalised reference asked for
	Repository string `json:"repository"` // normalised repository
	Tag        string `json:"tag"`        // tag in the reference, "" for a bare digest reference
	Digest     string `json:"digest"`     // digest the reference resolved to
	MediaType  string `json:"mediaType"`

	// Index is true for an image index (or Docker manifest list). Children
	// are its platform images in index order; attestation manifests
	// (platform unknown/unknown, or annotated
	// vnd.docker.reference.type=attestation-manifest) are left out.
	Index    bool    `json:"index"`
	Children []Child `json:"children"`

	// Platform is the os/architecture/variant of a single image's config;
	// nil for an index.
	Platform *imageref.Platform `json:"platform"`

	// Created is the config's created time; for an index, the
	// org.opencontainers.image.created annotation or else the newest child.
	Created time.Time `json:"created,omitzero"`

	// Labels are the config's labels; for an index, the labels all its
	// platform images share. Annotations are the manifest's or index's own.
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`

	// Revision, Source and Version are the org.opencontainers.image.*
	// values, from the annotations or else the labels.
	Revision string `json:"revision"`
	Source   string `json:"source"`
	Version  string `json:"version"`

	// Size is the total bytes stored: the manifest, its config and its
	// (compressed) layers. For an index: the index itself, each platform
	// child's manifest, and each distinct config and layer blob of those
	// children, counted once; attestations are not counted.
	Size int64 `json:"size"`
}

// Describe resolves ref and reads what it names: for an index its platform
// children, for an image its config's platform; created time, labels,
// annotations, the OCI revision/source/version, and the total size. Every
// manifest it reads is checked against its digest.
func (c *Client) Describe(ctx context.Context, ref string) (Image, error) {
	const op = "describing"
	ctx, cancel := c.call(ctx)
	defer cancel()
	r, err := c.parse(ref)
	if err != nil {
		return Image{}, c.fail(op, ref, "", fmt.Errorf("parsing reference: %w", err))
	}
	img, err := c.describe(ctx, r)
	if err != nil {
		return Image{}, c.fail(op, ref, r.Context().RegistryStr(), err)
	}
	return img, nil
}

// describe reads what r names. What a digest holds never changes, so it
// is read once per Client: a digest reference already described costs no
// request, a tag one HEAD.
func (c *Client) describe(ctx context.Context, r name.Reference) (Image, error) {
	repo := r.Context()
	digest := ""
	if dr, ok := r.(name.Digest); ok {
		digest = dr.DigestStr()
	} else {
		d, err := c.resolve(ctx, r)
		if err != nil {
			return Image{}, err
		}
		digest = d.Digest
	}
	if img, ok := c.described.get(repo.Name(), digest); ok {
		img.Reference, img.Tag = normalisedRef(r), tagOf(r)
		return img, nil
	}
	puller, err := c.pullerFor(ctx, repo)
	if err != nil {
		return Image{}, err
	}
	// Fetch by digest even when asked by tag: the tag may move meanwhile,
	// and a digest fetch is verified against what was resolved.
	rd, err := puller.Get(ctx, repo.Digest(digest))
	if err != nil {
		return Image{}, err
	}
	img := Image{
		Reference:  normalisedRef(r),
		Repository: repo.Name(),
		Tag:        tagOf(r),
		Digest:     digest,
		MediaType:  string(rd.MediaType),
		Children:   []Child{},
	}
	var f facts
	switch {
	case rd.MediaType.IsIndex():
		img.Index = true
		img.Children, f, err = describeIndex(ctx, puller, repo, rd)
	case rd.MediaType.IsSchema1():
		f = facts{manifests: int64(len(rd.Manifest))}
	default:
		f, err = describeManifest(rd)
	}
	if err != nil {
		return Image{}, err
	}
	img.Platform, img.Created, img.Size = f.platform, f.created, f.size()
	img.Labels = nonNil(f.labels)
	img.Annotations = nonNil(f.annotations)
	img.Revision = img.oci(keyRevision)
	img.Source = img.oci(keySource)
	img.Version = img.oci(keyVersion)
	if img.Created.IsZero() {
		if t, err := time.Parse(time.RFC3339, img.oci(keyCreated)); err == nil {
			img.Created = t
		}
	}
	c.described.put(img)
	return img, nil
}

// oci returns an org.opencontainers.image.* value, annotation first.
func (img Image) oci(key string) string {
	if v, ok := img.Annotations[key]; ok {
		return v
	}
	return img.Labels[key]
}

// facts are what one manifest (or an index's children together) tell.
type facts struct {
	platform    *imageref.Platform
	created     time.Time
	labels      map[string]string
	annotations map[string]string
	manifests   int64            // bytes of manifests
	blobs       map[string]int64 // config and layer sizes by digest
}

func (f facts) size() int64 {
	n := f.manifests
	for _, s := range f.blobs {
		n += s
	}
	return n
}

// describeManifest reads an image manifest and, when it has an image config,
// that config (fetched and verified by go-containerregistry).
func describeManifest(rd *remote.Descriptor) (facts, error) {
	m, err := v1.ParseManifest(bytes.NewReader(rd.Manifest))
	if err != nil {
		return facts{}, fmt.Errorf("parsing manifest %s: %w", rd.Digest, err)
	}
	f := facts{
		annotations: m.Annotations,
		manifests:   int64(len(rd.Manifest)),
		blobs:       map[string]int64{m.Config.Digest.String(): m.Config.Size},
	}
	for _, l := range m.Layers {
		f.blobs[l.Digest.String()] = l.Size
	}
	switch m.Config.MediaType {
	case types.DockerConfigJSON, types.OCIConfigJSON:
	default:
		return f, nil // an artifact: no image config to read
	}
	img, err := rd.Image()
	if err != nil {
		return facts{}, fmt.Errorf("reading image %s: %w", rd.Digest, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return facts{}, fmt.Errorf("reading config %s of %s: %w", m.Config.Digest, rd.Digest, err)
	}
	if cf.OS != "" || cf.Architecture != "" {
		f.platform = &imageref.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
	}
	f.created = cf.Created.Time
	f.labels = cf.Config.Labels
	return f, nil
}

// describeIndex reads an index and, childReads at a time, each of its
// platform images. The first child that fails stops the rest.
func describeIndex(ctx context.Context, puller *remote.Puller, repo name.Repository, rd *remote.Descriptor) ([]Child, facts, error) {
	im, err := parseIndex(rd.Manifest, rd.Digest.String())
	if err != nil {
		return nil, facts{}, err
	}
	type result struct {
		child Child
		facts facts
		image bool
	}
	var results []*result
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(childReads)
	for _, d := range im.Manifests {
		if isAttestation(d) {
			continue
		}
		res := &result{child: childOf(d), facts: facts{manifests: d.Size}}
		results = append(results, res)
		if !d.MediaType.IsImage() {
			continue // a nested index or an artifact: counted, not read
		}
		g.Go(func() error {
			cd, err := puller.Get(gctx, repo.Digest(d.Digest.String()))
			if err != nil {
				return fmt.Errorf("fetching child %s: %w", d.Digest, err)
			}
			if res.facts, err = describeManifest(cd); err != nil {
				return err
			}
			res.image = true
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, facts{}, err
	}

	f := facts{annotations: im.Annotations, manifests: int64(len(rd.Manifest)), blobs: map[string]int64{}}
	children := []Child{}
	first := true
	for _, res := range results {
		if res.child.Platform == (imageref.Platform{}) && res.facts.platform != nil {
			res.child.Platform = *res.facts.platform
		}
		children = append(children, res.child)
		f.manifests += res.facts.manifests
		maps.Copy(f.blobs, res.facts.blobs)
		if !res.image {
			continue
		}
		if res.facts.created.After(f.created) {
			f.created = res.facts.created
		}
		if first {
			f.labels = maps.Clone(res.facts.labels)
			first = false
			continue
		}
		for k, v := range f.labels {
			if w, ok := res.facts.labels[k]; !ok || w != v {
				delete(f.labels, k)
			}
		}
	}
	if t, err := time.Parse(time.RFC3339, im.Annotations[keyCreated]); err == nil {
		f.created = t
	}
	return children, f, nil
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
