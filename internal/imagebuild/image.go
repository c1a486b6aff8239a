package imagebuild

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Where things are in the image, and whom it runs as.
const (
	// BinaryPath is pinbot's path in the image, and the entrypoint.
	BinaryPath = "/usr/local/bin/pinbot"
	// CABundlePath is where the image holds the CA bundle, the first
	// place Go's crypto/x509 looks on Linux.
	CABundlePath = "/etc/ssl/certs/ca-certificates.crt"
	// UID and GID are the non-root user and group the image runs as,
	// distroless's "nonroot".
	UID, GID = 65532, 65532
	// User is the config's User: UID:GID, numeric so that a runtime
	// enforcing runAsNonRoot can check it without reading /etc/passwd.
	User = "65532:65532"
)

// DefaultCABundle is the build machine's CA bundle (Debian's and Ubuntu's
// path), copied into the image.
const DefaultCABundle = "/etc/ssl/certs/ca-certificates.crt"

// OCI label keys the image carries.
const (
	LabelRevision = "org.opencontainers.image.revision"
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
)

// passwd and group name root and the non-root user, so that libraries
// looking the user up (os/user, git, ssh) find it.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nonroot:x:65532:\n"
)

// Binary is a pinbot binary built for one platform.
type Binary struct {
	Platform v1.Platform
	// Path is the binary on the build machine.
	Path string
}

// Options say what goes into the index.
type Options struct {
	// Binaries are the platforms' binaries, in index order.
	Binaries []Binary
	// CABundle is the build machine's CA bundle; default DefaultCABundle.
	CABundle string
	// Labels are the config's labels, such as LabelRevision.
	Labels map[string]string
	// Created is the images' creation time and every file's modification
	// time, in whole seconds: SOURCE_DATE_EPOCH.
	Created time.Time
	// Annotations go on the index and on each image's manifest (see
	// Annotations).
	Annotations map[string]string
	// Shell, when set, makes the debug variant: each platform's image
	// gains a shell, the static hack/debugshell at that path (keyed by
	// the platform, "linux/amd64"), and a platform without one is left
	// out.
	Shell map[string]string
}

// Index returns the OCI index of one image per binary, each on an empty
// base with the shared base layer and the binary's layer. It reads no file
// but the CA bundle and the binaries, and writes nothing.
func Index(o Options) (v1.ImageIndex, error) {
	if len(o.Binaries) == 0 {
		return nil, errors.New("building the image index: no binaries")
	}
	if o.CABundle == "" {
		o.CABundle = DefaultCABundle
	}
	if _, err := os.Stat(o.CABundle); err != nil {
		return nil, fmt.Errorf("reading the CA bundle %s: %w", o.CABundle, err)
	}
	created := o.Created.UTC().Truncate(time.Second)
	base, err := Layer(BaseFiles(o.CABundle), created)
	if err != nil {
		return nil, fmt.Errorf("building the base layer: %w", err)
	}
	seen := map[string]bool{}
	adds := make([]mutate.IndexAddendum, 0, len(o.Binaries))
	for _, b := range o.Binaries {
		p := b.Platform
		if seen[p.String()] {
			return nil, fmt.Errorf("building the image index: platform %s listed twice", p)
		}
		seen[p.String()] = true
		var shell v1.Layer
		if o.Shell != nil {
			sh, ok := o.Shell[p.String()]
			if !ok {
				continue
			}
			if shell, err = Layer(ShellFiles(sh), created); err != nil {
				return nil, fmt.Errorf("building the %s shell layer: %w", p, err)
			}
		}
		img, err := image(base, shell, b, o.Labels, created)
		if err != nil {
			return nil, fmt.Errorf("building the %s image: %w", p, err)
		}
		img = mutate.Annotations(img, o.Annotations).(v1.Image)
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	if len(adds) == 0 {
		return nil, errors.New("building the debug image index: no platform has a shell")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	idx = mutate.AppendManifests(idx, adds...)
	return mutate.Annotations(idx, o.Annotations).(v1.ImageIndex), nil
}

// BaseFiles are the entries of the base layer: the CA bundle copied from
// caBundle, /etc/passwd, /etc/group, the user's home and /tmp.
func BaseFiles(caBundle string) []File {
	return []File{
		{Path: "/etc/group", Mode: 0o644, Data: []byte(group)},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Path: CABundlePath, Mode: 0o644, Source: caBundle},
		{Path: "/home/nonroot", Mode: fs.ModeDir | 0o700, UID: UID, GID: GID},
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
	}
}

// image returns the OCI image of one binary, with the shell layer when
// shell is not nil.
func image(base, shell v1.Layer, b Binary, labels map[string]string, created time.Time) (v1.Image, error) {
	app, err := Layer([]File{{Path: BinaryPath, Mode: 0o755, Source: b.Path}}, created)
	if err != nil {
		return nil, fmt.Errorf("building the binary's layer: %w", err)
	}
	cfg := &v1.ConfigFile{
		Created:      v1.Time{Time: created},
		Architecture: b.Platform.Architecture,
		OS:           b.Platform.OS,
		Variant:      b.Platform.Variant,
		OSVersion:    b.Platform.OSVersion,
		Config: v1.Config{
			Entrypoint: []string{BinaryPath},
			User:       User,
			WorkingDir: "/",
			Env: []string{
				"PATH=/usr/local/bin:/usr/bin:/bin",
				"SSL_CERT_FILE=" + CABundlePath,
			},
			Labels: maps.Clone(labels),
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img, err := mutate.ConfigFile(empty.Image, cfg)
	if err != nil {
		return nil, err
	}
	layers := []mutate.Addendum{{Layer: base, MediaType: types.OCILayer, History: v1.History{
		Created: v1.Time{Time: created}, CreatedBy: "pinbot hack/image: CA bundle, passwd, group", Comment: "base"}}}
	if shell != nil {
		layers = append(layers, mutate.Addendum{Layer: shell, MediaType: types.OCILayer, History: v1.History{
			Created: v1.Time{Time: created}, CreatedBy: "pinbot hack/release: " + ShellPath, Comment: "debug shell"}})
	}
	layers = append(layers, mutate.Addendum{Layer: app, MediaType: types.OCILayer, History: v1.History{
		Created: v1.Time{Time: created}, CreatedBy: "pinbot hack/image: " + BinaryPath, Comment: "pinbot"}})
	img, err = mutate.Append(img, layers...)
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	return mutate.ConfigMediaType(img, types.OCIConfigJSON), nil
}
