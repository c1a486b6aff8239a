package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"pinbot.dev/pinbot/hack/internal/command"
	"pinbot.dev/pinbot/internal/imagebuild"
	"pinbot.dev/pinbot/trust/sign"
)

// options are the command line, checked.
type options struct {
	version   string
	out       string
	registry  string // REGISTRY/ORG, "" for no images and no chart
	image     name.Repository
	chart     name.Repository
	platforms []v1.Platform
	ldflags   string
	goCmd     string
	dir       string
	sbomDir   string
	shellDir  string
	chartDir  string
	source    string
	revision  string
	caBundle  string
	insecure  bool
	caFile    string // the registry's CA, besides the system roots
	changelog string // "" for CHANGELOG.md in dir
	// transport trusts caFile; plainHTTP is set only when checkRegistry
	// found a plain-HTTP registry it may use.
	transport   *http.Transport
	plainHTTP   bool
	keyFile     string
	key         *sign.Key
	created     time.Time
	password    []byte
	nameOptions []name.Option
}

// usagef is a bad command line; main exits 2 on it.
var usagef = command.Usagef

// semver is a release version: vMAJOR.MINOR.PATCH, with an optional
// pre-release.
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$`)

// DefaultPlatforms are the release's binaries.
const DefaultPlatforms = "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64"

// parse reads args, SOURCE_DATE_EPOCH and COSIGN_PASSWORD.
func parse(args []string, getenv func(string) string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		platforms = fs.String("platforms", DefaultPlatforms, "comma-separated OS/ARCH to build binaries for; the linux ones go into the images")
		o         = &options{}
	)
	fs.StringVar(&o.version, "version", "", "the release's version, vX.Y.Z (required)")
	fs.StringVar(&o.out, "out", "dist", "directory to write the release into; it must not exist or be empty")
	fs.StringVar(&o.registry, "registry", "", "REGISTRY/ORG to push to: the images REGISTRY/ORG/pinbot:VERSION and :VERSION-debug, the chart oci://REGISTRY/ORG/charts/pinbot (default: nothing pushed)")
	fs.StringVar(&o.keyFile, "key", "", "the private key to sign with, as cosign generate-key-pair writes it (its password in COSIGN_PASSWORD); default: nothing signed")
	fs.StringVar(&o.ldflags, "ldflags", "", "go build -ldflags, such as the version's -X")
	fs.StringVar(&o.goCmd, "go", "go", "the go command")
	fs.StringVar(&o.dir, "dir", ".", "the module directory to build in")
	fs.StringVar(&o.sbomDir, "sbom-tool", filepath.Join("hack", "tools", "sbom"), "the tools module of cyclonedx-gomod, relative to --dir")
	fs.StringVar(&o.shellDir, "shell", filepath.Join("hack", "debugshell"), "the module of the -debug image's shell, relative to --dir")
	fs.StringVar(&o.chartDir, "chart", filepath.Join("charts", "pinbot"), "the Helm chart, relative to --dir")
	fs.StringVar(&o.source, "source", "", "source annotation, a URL (default: git remote get-url origin)")
	fs.StringVar(&o.caBundle, "ca-bundle", imagebuild.DefaultCABundle, "CA bundle of the build machine to copy into the images")
	fs.BoolVar(&o.insecure, "insecure", false, "allow plain HTTP to a registry that is not on loopback")
	fs.StringVar(&o.changelog, "changelog", "", "the CHANGELOG whose heading must date --version (default: CHANGELOG.md in --dir)")
	fs.StringVar(&o.caFile, "ca-file", "", "PEM bundle of the registry's CA, trusted besides the system roots (a registry whose certificate does not verify is refused, never spoken to in plain HTTP)")
	if err := fs.Parse(args); err != nil {
		return nil, usagef("%s", err)
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q", fs.Arg(0))
	}
	if !semver.MatchString(o.version) {
		return nil, usagef("flag --version %q: want vMAJOR.MINOR.PATCH, as in make release VERSION=v0.5.0", o.version)
	}
	for _, p := range strings.Split(*platforms, ",") {
		pl, err := v1.ParsePlatform(strings.TrimSpace(p))
		if err != nil || pl.OS == "" || pl.Architecture == "" {
			return nil, usagef("flag --platforms: %q: want OS/ARCH", p)
		}
		o.platforms = append(o.platforms, *pl)
	}
	if o.registry != "" {
		o.nameOptions = []name.Option{name.StrictValidation}
		var err error
		if o.image, err = name.NewRepository(strings.TrimSuffix(o.registry, "/")+"/pinbot", o.nameOptions...); err != nil {
			return nil, usagef("flag --registry %q: %s (want REGISTRY/ORG)", o.registry, err)
		}
		if o.chart, err = name.NewRepository(strings.TrimSuffix(o.registry, "/")+"/charts/pinbot", o.nameOptions...); err != nil {
			return nil, usagef("flag --registry %q: %s (want REGISTRY/ORG)", o.registry, err)
		}
	}
	if s := getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil || sec < 0 {
			return nil, usagef("SOURCE_DATE_EPOCH %q: want seconds since 1970", s)
		}
		o.created = time.Unix(sec, 0).UTC()
	}
	o.password = []byte(getenv("COSIGN_PASSWORD"))
	return o, nil
}

// resolve fills what the flags left to the work tree, and checks the
// output directory and the key before minutes of compiling.
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
	src, err := os.ReadFile(filepath.Join(o.dir, "VERSION"))
	if err != nil {
		return fmt.Errorf("reading the source's version: %w", err)
	}
	if v := strings.TrimSpace(string(src)); v != o.version {
		return fmt.Errorf("flag --version %s: this source is %s (file VERSION); to release %s, set it in VERSION, the chart, deploy/base and the CHANGELOG first (TestOneVersion names every place)", o.version, v, o.version)
	}
	if err := o.released(); err != nil {
		return err
	}
	if entries, err := os.ReadDir(o.out); err == nil && len(entries) > 0 {
		return fmt.Errorf("--out %s is not empty: remove it first, so no file of another release is mixed in", o.out)
	}
	if o.keyFile != "" {
		if o.key, err = sign.LoadKey(o.keyFile, o.password); err != nil {
			return fmt.Errorf("flag --key: %w", err)
		}
	}
	if o.registry != "" {
		return o.checkRegistry(ctx)
	}
	return nil
}

// released checks that the CHANGELOG dates the version's heading: code it
// calls unreleased never takes the release's version.
func (o *options) released() error {
	path := o.changelog
	if path == "" {
		path = filepath.Join(o.dir, "CHANGELOG.md")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the CHANGELOG: %w", err)
	}
	dated := regexp.MustCompile(`(?m)^## ` + regexp.QuoteMeta(o.version) + ` \(\d{4}-\d{2}-\d{2}\)$`)
	if !dated.Match(data) {
		return fmt.Errorf("%s does not date %s (a heading \"## %s (YYYY-MM-DD)\"): a release is made from the commit that does, and code it calls unreleased never takes the release's version", path, o.version, o.version)
	}
	return nil
}

// chartVersion is the chart's version of the release: its version
// without the v, as SemVer 2 wants it.
func (o *options) chartVersion() string { return strings.TrimPrefix(o.version, "v") }

// archiveName is the base name of the platform's archive and SBOM.
func (o *options) archiveName(p v1.Platform) string {
	n := "pinbot_" + o.version + "_" + p.OS + "_" + p.Architecture
	if p.Variant != "" {
		n += "_" + p.Variant
	}
	return n
}
