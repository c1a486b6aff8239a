package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
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
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"pinbot.dev/pinbot/internal/imagebuild"
)

// release is one run: its options and where it reports.
type release struct {
	o              *options
	stdout, stderr io.Writer
	started        time.Time
	files          []string          // every file written, for checksums.txt
	sums           map[string]string // name -> SHA-256 of the binaries and SBOMs
	remote         []remote.Option
}

func (r *release) logf(format string, args ...any) {
	fmt.Fprintf(r.stderr, ">> "+format+"\n", args...)
}

// build writes the release: binaries, SBOMs, provenance and checksums,
// then the images when --image is set.
func (r *release) build(ctx context.Context) error {
	r.started = time.Now().UTC()
	r.sums = map[string]string{}
	if err := os.MkdirAll(r.o.out, 0o755); err != nil {
		return err
	}
	r.logf("compiling pinbot %s for %d platforms into %s", r.o.version, len(r.o.platforms), r.o.out)
	bins, err := imagebuild.Compile(ctx, imagebuild.CompileOptions{
		Go: r.o.goCmd, Dir: r.o.dir, Platforms: r.o.platforms, LDFlags: r.o.ldflags, OutDir: r.o.out, Stderr: r.stderr,
	})
	if err != nil {
		return err
	}
	for _, b := range bins {
		if err := r.sbom(ctx, b.Path); err != nil {
			return err
		}
		r.files = append(r.files, b.Path)
	}
	if err := r.provenance(); err != nil {
		return err
	}
	if err := r.checksums(); err != nil {
		return err
	}
	if !r.o.hasImage {
		return nil
	}
	var linux []imagebuild.Binary
	for _, b := range bins {
		if b.Platform.OS == "linux" {
			linux = append(linux, b)
		}
	}
	if len(linux) == 0 {
		return fmt.Errorf("--image: no linux platform among --platforms to build an image of")
	}
	r.remote = []remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	if _, err := r.image(ctx, linux, r.o.version, nil); err != nil {
		return err
	}
	_, err = r.image(ctx, linux, r.o.version+"-debug", r.o.busybox)
	return err
}

// sbom writes bin.cdx.json, the CycloneDX SBOM of the binary bin, with
// cyclonedx-gomod from its tools module.
func (r *release) sbom(ctx context.Context, bin string) error {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	out := abs + ".cdx.json"
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
	var subjects []imagebuild.Subject
	for _, f := range r.files {
		sum, err := sha256File(f)
		if err != nil {
			return err
		}
		r.sums[filepath.Base(f)] = sum
		subjects = append(subjects, imagebuild.Subject{Name: filepath.Base(f), Digest: map[string]string{"sha256": sum}})
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

// image builds, pushes and attests the image tag of bins (with a shell
// when busybox is set), and prints its digest reference.
func (r *release) image(ctx context.Context, bins []imagebuild.Binary, tag string, busybox map[string]string) (name.Digest, error) {
	idx, err := imagebuild.Index(imagebuild.Options{
		Binaries:    bins,
		CABundle:    r.o.caBundle,
		Labels:      imagebuild.Labels(r.o.revision, r.o.source, r.o.version),
		Annotations: imagebuild.Annotations(r.o.revision, r.o.source, r.o.version, r.o.created),
		Created:     r.o.created,
		Busybox:     busybox,
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
	st, err := imagebuild.Provenance([]imagebuild.Subject{imagebuild.ImageSubject(d)}, r.facts())
	if err != nil {
		return name.Digest{}, err
	}
	if _, err := imagebuild.Attach(ctx, d, st, r.remote...); err != nil {
		return name.Digest{}, err
	}
	_, err = fmt.Fprintln(r.stdout, d.String())
	return d, err
}

// checkStatic says whether the busybox at p is a static Linux binary:
// the debug image has no libc for a dynamic one.
func checkStatic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("%s: %w (install Debian's busybox-static)", p, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked; the image has no libc (install Debian's busybox-static)", p)
		}
	}
	return nil
}
