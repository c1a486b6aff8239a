package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/internal/imagebuild"
	"pinbot.dev/pinbot/trust/sign"
)

// release is one run: its options and where it reports.
type release struct {
	o              *options
	stdout, stderr io.Writer
	started        time.Time
	files          []string          // every file written, for checksums.txt
	sums           map[string]string // name -> SHA-256 of the archives and SBOMs
	remote         []remote.Option
}

func (r *release) logf(format string, args ...any) {
	fmt.Fprintf(r.stderr, ">> "+format+"\n", args...)
}

// build writes the release: archives, SBOMs, the chart, provenance and
// checksums; with --registry it pushes the images and the chart first;
// with --key it signs the checksums, the images and the chart.
func (r *release) build(ctx context.Context) error {
	r.started = time.Now().UTC()
	r.sums = map[string]string{}
	r.remote = []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithContext(ctx)}
	if r.o.transport != nil {
		r.remote = append(r.remote, remote.WithTransport(r.o.transport))
	}
	if err := os.MkdirAll(r.o.out, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "pinbot-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	r.logf("compiling pinbot %s for %d platforms", r.o.version, len(r.o.platforms))
	bins, err := imagebuild.Compile(ctx, imagebuild.CompileOptions{
		Go: r.o.goCmd, Dir: r.o.dir, Platforms: r.o.platforms, LDFlags: r.o.ldflags, OutDir: work, Stderr: r.stderr,
	})
	if err != nil {
		return err
	}
	completions, err := r.completions(ctx, bins, work)
	if err != nil {
		return err
	}
	for _, b := range bins {
		a, err := r.archive(b, completions)
		if err != nil {
			return err
		}
		if err := r.sbom(ctx, b.Path, filepath.Join(r.o.out, r.o.archiveName(b.Platform)+".cdx.json")); err != nil {
			return err
		}
		r.files = append(r.files, a)
	}
	var imgs *images
	if r.o.registry != "" {
		if imgs, err = r.images(ctx, bins, work); err != nil {
			return err
		}
	}
	tgz, err := r.packageChart(imgs)
	if err != nil {
		return err
	}
	r.files = append(r.files, tgz)
	if err := r.provenance(); err != nil {
		return err
	}
	if err := r.checksums(); err != nil {
		return err
	}
	if r.o.key != nil {
		if err := r.signChecksums(); err != nil {
			return err
		}
	}
	if r.o.registry == "" {
		return nil
	}
	chartRef, err := r.pushChart(tgz)
	if err != nil {
		return err
	}
	if err := r.signArtifact(ctx, chartRef, "chart"); err != nil {
		return err
	}
	for _, d := range []name.Digest{imgs.plain, imgs.debug} {
		if _, err := fmt.Fprintln(r.stdout, d.String()); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(r.stdout, "oci://%s@%s\n", r.o.chart.Tag(r.o.chartVersion()), chartRef.DigestStr())
	return err
}

// signChecksums writes checksums.txt.sigstore.json, the Sigstore bundle
// of checksums.txt, and cosign.pub, the key that verifies it: each file's
// signature is its line in the signed checksums.
func (r *release) signChecksums() error {
	data, err := os.ReadFile(filepath.Join(r.o.out, "checksums.txt"))
	if err != nil {
		return err
	}
	bundle, err := r.o.key.Blob(data)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.o.out, "checksums.txt.sigstore.json"), bundle, 0o644); err != nil {
		return err
	}
	pub, err := r.o.key.PublicPEM()
	if err != nil {
		return err
	}
	r.logf("signed checksums.txt")
	return os.WriteFile(filepath.Join(r.o.out, "cosign.pub"), pub, 0o644)
}

// signArtifact signs the pushed d (an image or the chart) as cosign sign
// does, when the release has a key.
func (r *release) signArtifact(ctx context.Context, d name.Digest, what string) error {
	if r.o.key == nil {
		return nil
	}
	if _, err := sign.Image(ctx, r.o.key, d, r.remote...); err != nil {
		return fmt.Errorf("signing the %s %s: %w", what, d, err)
	}
	r.logf("signed the %s %s", what, d.DigestStr())
	return nil
}

// sbom writes out, the CycloneDX SBOM of the binary bin, with
// cyclonedx-gomod from its tools module.
func (r *release) sbom(ctx context.Context, bin, out string) error {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	if out, err = filepath.Abs(out); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, r.o.goCmd, "tool", "cyclonedx-gomod", "bin", "-json", "-version", r.o.version, "-output", out, abs)
	cmd.Dir = filepath.Join(r.o.dir, r.o.sbomDir)
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msg, &msg
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("writing the SBOM of %s (cyclonedx-gomod in %s): %w\n%s", filepath.Base(bin), r.o.sbomDir, err, strings.TrimSpace(msg.String()))
	}
	r.logf("SBOM %s", filepath.Base(out))
	r.files = append(r.files, out)
	return nil
}

// sha256File returns the hex SHA-256 of the file at p.
func sha256File(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// provenance writes provenance.intoto.json: the statement whose subjects
// are the binaries and their SBOMs.
func (r *release) provenance() error {
	var subjects []sign.Subject
	for _, f := range r.files {
		sum, err := sha256File(f)
		if err != nil {
			return err
		}
		r.sums[filepath.Base(f)] = sum
		subjects = append(subjects, sign.Subject{Name: filepath.Base(f), Digest: map[string]string{"sha256": sum}})
	}
	st, err := imagebuild.Provenance(subjects, r.facts())
	if err != nil {
		return err
	}
	p := filepath.Join(r.o.out, "provenance.intoto.json")
	if err := os.WriteFile(p, append(st, '\n'), 0o644); err != nil {
		return err
	}
	r.files = append(r.files, p)
	return nil
}

// facts are what the provenance says of this build.
func (r *release) facts() imagebuild.Build {
	host, _ := os.Hostname()
	return imagebuild.Build{
		Command:   "make release VERSION=" + r.o.version,
		Version:   r.o.version,
		Revision:  r.o.revision,
		Source:    r.o.source,
		Builder:   "pinbot hack/release on " + host,
		GoVersion: runtime.Version(),
		Started:   r.started,
		Finished:  time.Now().UTC(),
		Binaries:  r.sums,
	}
}

// checksums writes checksums.txt in sha256sum's format, sorted by name.
func (r *release) checksums() error {
	var lines []string
	for _, f := range r.files {
		sum, err := sha256File(f)
		if err != nil {
			return err
		}
		lines = append(lines, sum+"  "+filepath.Base(f))
	}
	slices.SortFunc(lines, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
	p := filepath.Join(r.o.out, "checksums.txt")
	r.logf("checksums.txt: %d files", len(lines))
	return os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// images builds the debug image's shell, then builds, pushes, signs and
// attests REPO:VERSION and REPO:VERSION-debug of the linux binaries.
func (r *release) images(ctx context.Context, bins []imagebuild.Binary, work string) (*images, error) {
	var linux []imagebuild.Binary
	var platforms []v1.Platform
	for _, b := range bins {
		if b.Platform.OS == "linux" {
			linux = append(linux, b)
			platforms = append(platforms, b.Platform)
		}
	}
	if len(linux) == 0 {
		return nil, fmt.Errorf("--registry: no linux platform among --platforms to build an image of")
	}
	r.logf("compiling the debug shell (%s) for %d platforms", r.o.shellDir, len(platforms))
	shells, err := imagebuild.Compile(ctx, imagebuild.CompileOptions{
		Go: r.o.goCmd, Dir: filepath.Join(r.o.dir, r.o.shellDir), Package: ".", Name: "debugshell",
		Platforms: platforms, OutDir: filepath.Join(work, "shell"), Stderr: r.stderr,
	})
	if err != nil {
		return nil, err
	}
	shell := map[string]string{}
	for _, s := range shells {
		shell[s.Platform.String()] = s.Path
	}
	var imgs images
	if imgs.plain, err = r.image(ctx, linux, r.o.version, nil); err != nil {
		return nil, err
	}
	if imgs.debug, err = r.image(ctx, linux, r.o.version+"-debug", shell); err != nil {
		return nil, err
	}
	return &imgs, nil
}

// image builds and pushes the image tag of bins (with a shell when shell
// is set), then signs it and attaches its provenance: signed as cosign
// attest does with a key, a plain statement without.
func (r *release) image(ctx context.Context, bins []imagebuild.Binary, tag string, shell map[string]string) (name.Digest, error) {
	idx, err := imagebuild.Index(imagebuild.Options{
		Binaries:    bins,
		CABundle:    r.o.caBundle,
		Labels:      imagebuild.Labels(r.o.revision, r.o.source, r.o.version),
		Annotations: imagebuild.Annotations(r.o.revision, r.o.source, r.o.version, r.o.created),
		Created:     r.o.created,
		Shell:       shell,
	})
	if err != nil {
		return name.Digest{}, err
	}
	ref := r.o.image.Tag(tag)
	r.logf("pushing %s", ref)
	d, err := imagebuild.Push(ctx, ref, idx, r.remote...)
	if err != nil {
		return name.Digest{}, err
	}
	if err := r.signArtifact(ctx, d, "image"); err != nil {
		return name.Digest{}, err
	}
	if r.o.key != nil {
		_, err = sign.Attest(ctx, r.o.key, d, imagebuild.ProvenanceType, imagebuild.ProvenancePredicate(r.facts()), nil, r.remote...)
		return d, err
	}
	st, err := imagebuild.Provenance([]sign.Subject{imagebuild.ImageSubject(d)}, r.facts())
	if err != nil {
		return name.Digest{}, err
	}
	_, err = imagebuild.Attach(ctx, d, st, r.remote...)
	return d, err
}
