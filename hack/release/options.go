package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"pinbot.dev/pinbot/hack/internal/command"
	"pinbot.dev/pinbot/internal/imagebuild"
)

// options are the command line, checked.
type options struct {
	version   string
	out       string
	image     name.Repository
	hasImage  bool
	platforms []v1.Platform
	busybox   map[string]string
	ldflags   string
	goCmd     string
	dir       string
	sbomDir   string
	source    string
	revision  string
	caBundle  string
	insecure  bool
	created   time.Time
}

// usagef is a bad command line; main exits 2 on it.
var usagef = command.Usagef

// semver is a release version: vMAJOR.MINOR.PATCH, with an optional
// pre-release.
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// DefaultPlatforms are the release's binaries.
const DefaultPlatforms = "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64"

// parse reads args and SOURCE_DATE_EPOCH.
func parse(args []string, getenv func(string) string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		image     = fs.String("image", "", "registry/repo to push the images to, as REPO:VERSION and REPO:VERSION-debug (default: no images)")
		platforms = fs.String("platforms", DefaultPlatforms, "comma-separated OS/ARCH to build binaries for; the linux ones go into the images")
		busybox   = fs.String("busybox", "linux/"+runtime.GOARCH+"=/bin/busybox", "comma-separated PLATFORM=PATH of static busybox binaries for the -debug image (Debian's busybox-static)")
		o         = &options{}
	)
	fs.StringVar(&o.version, "version", "", "the release's version, vX.Y.Z (required)")
	fs.StringVar(&o.out, "out", "dist", "directory to write the release into; it must not exist or be empty")
	fs.StringVar(&o.ldflags, "ldflags", "", "go build -ldflags, such as the version's -X")
	fs.StringVar(&o.goCmd, "go", "go", "the go command")
	fs.StringVar(&o.dir, "dir", ".", "the module directory to build in")
	fs.StringVar(&o.sbomDir, "sbom-tool", filepath.Join("hack", "tools", "sbom"), "the tools module of cyclonedx-gomod, relative to --dir")
	fs.StringVar(&o.source, "source", "", "source annotation, a URL (default: git remote get-url origin)")
	fs.StringVar(&o.caBundle, "ca-bundle", imagebuild.DefaultCABundle, "CA bundle of the build machine to copy into the images")
	fs.BoolVar(&o.insecure, "insecure", false, "allow plain HTTP to a registry that is not on loopback")
	if err := fs.Parse(args); err != nil {
		return nil, usagef("%s", err)
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q", fs.Arg(0))
	}
	if !semver.MatchString(o.version) {
		return nil, usagef("flag --version %q: want vMAJOR.MINOR.PATCH, as in make release VERSION=v0.3.0", o.version)
	}
	for _, p := range strings.Split(*platforms, ",") {
		pl, err := v1.ParsePlatform(strings.TrimSpace(p))
		if err != nil || pl.OS == "" || pl.Architecture == "" {
			return nil, usagef("flag --platforms: %q: want OS/ARCH", p)
		}
		o.platforms = append(o.platforms, *pl)
	}
	if *image != "" {
		var opts []name.Option
		if o.insecure {
			opts = append(opts, name.Insecure)
		}
		repo, err := name.NewRepository(*image, append(opts, name.StrictValidation)...)
		if err != nil {
			return nil, usagef("flag --image: %s", err)
		}
		o.image, o.hasImage = repo, true
		o.busybox = map[string]string{}
		for _, kv := range strings.Split(*busybox, ",") {
			p, path, ok := strings.Cut(strings.TrimSpace(kv), "=")
			if !ok || p == "" || path == "" {
				return nil, usagef("flag --busybox: %q: want PLATFORM=PATH", kv)
			}
			o.busybox[p] = path
		}
	}
	if s := getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil || sec < 0 {
			return nil, usagef("SOURCE_DATE_EPOCH %q: want seconds since 1970", s)
		}
		o.created = time.Unix(sec, 0).UTC()
	}
	return o, nil
}

// resolve fills what the flags left to the work tree, and checks the
// output directory and the busybox binaries before minutes of compiling.
func (o *options) resolve(ctx context.Context) error {
	facts, err := imagebuild.Git(ctx, o.dir)
	if err != nil {
		return err
	}
	o.revision = facts.Revision
	if o.source == "" {
		o.source = facts.Source
	}
	if o.created.IsZero() {
		o.created = time.Now().UTC()
	}
	if entries, err := os.ReadDir(o.out); err == nil && len(entries) > 0 {
		return fmt.Errorf("--out %s is not empty: remove it first, so no file of another release is mixed in", o.out)
	}
	for p, path := range o.busybox {
		if err := checkStatic(path); err != nil {
			return fmt.Errorf("flag --busybox %s: %w", p, err)
		}
	}
	return nil
}
