package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"pinbot.dev/pinbot/hack/internal/command"
	"pinbot.dev/pinbot/internal/imagebuild"
	"pinbot.dev/pinbot/internal/redact"
)

// options are the command line, checked.
type options struct {
	image     name.Tag
	version   string
	source    string
	revision  string
	ldflags   string
	goCmd     string
	dir       string
	platforms []v1.Platform
	caBundle  string
	insecure  bool
	created   time.Time
	pinWith   string
	pinDir    string
	pinRepo   name.Repository
}

// usagef is a bad command line; main exits 2 on it.
var usagef = command.Usagef

// parse reads args and SOURCE_DATE_EPOCH.
func parse(args []string, getenv func(string) string, stderr io.Writer) (*options, error) {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		image     = fs.String("image", "", "registry/repo:tag to push the index to (required)")
		platforms = fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated OS/ARCH[/VARIANT] to build for")
		pinRepo   = fs.String("pin-repo", "", "repository the pins under --pin-dir name (default: --image's)")
		o         = &options{}
	)
	fs.StringVar(&o.version, "version", "", "version label (default: git describe --tags --always --dirty)")
	fs.StringVar(&o.source, "source", "", "source label, a URL (default: git remote get-url origin)")
	fs.StringVar(&o.ldflags, "ldflags", "", "go build -ldflags, such as the version's -X")
	fs.StringVar(&o.goCmd, "go", "go", "the go command")
	fs.StringVar(&o.dir, "dir", ".", "the module directory to build in")
	fs.StringVar(&o.caBundle, "ca-bundle", imagebuild.DefaultCABundle, "CA bundle of the build machine to copy into the image")
	fs.BoolVar(&o.insecure, "insecure", false, "allow plain HTTP to a registry that is not on loopback")
	fs.StringVar(&o.pinWith, "pin-with", "", "pinbot binary to rewrite the pins under --pin-dir with (default: no rewrite)")
	fs.StringVar(&o.pinDir, "pin-dir", "deploy", "directory whose pins of the image --pin-with rewrites")
	if err := fs.Parse(args); err != nil {
		return nil, usagef("%s", err)
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q", fs.Arg(0))
	}
	if *image == "" {
		return nil, usagef("flag --image: want registry/repo:tag, as in make image IMAGE=registry/repo:tag")
	}
	var nameOpts []name.Option
	if o.insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	tag, err := name.NewTag(*image, append(nameOpts, name.StrictValidation)...)
	if err != nil {
		return nil, usagef("flag --image %q: want registry/repo:tag: %s", *image, err)
	}
	o.image = tag
	o.pinRepo = tag.Context()
	if *pinRepo != "" {
		if o.pinRepo, err = name.NewRepository(*pinRepo, nameOpts...); err != nil {
			return nil, usagef("flag --pin-repo %q: want a repository: %s", *pinRepo, err)
		}
	}
	for _, s := range strings.Split(*platforms, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(s))
		if err != nil || p.OS == "" || p.Architecture == "" {
			return nil, usagef("flag --platforms: %q: want OS/ARCH[/VARIANT]", s)
		}
		o.platforms = append(o.platforms, *p)
	}
	if o.created, err = sourceDateEpoch(getenv("SOURCE_DATE_EPOCH")); err != nil {
		return nil, err
	}
	return o, nil
}

// sourceDateEpoch parses SOURCE_DATE_EPOCH; unset, it is the Unix epoch.
func sourceDateEpoch(s string) (time.Time, error) {
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, usagef("SOURCE_DATE_EPOCH=%q: want whole seconds since 1970", s)
	}
	return time.Unix(n, 0).UTC(), nil
}

// resolve fills the labels git knows and the flags do not give.
func (o *options) resolve(ctx context.Context) error {
	facts, err := imagebuild.Git(ctx, o.dir)
	if err != nil {
		return fmt.Errorf("reading the labels from git: %w", err)
	}
	o.revision = facts.Revision
	if o.version == "" {
		o.version = facts.Version
	}
	if o.source == "" {
		o.source = facts.Source
	}
	// make image passes the origin's URL, which may carry a token.
	o.source = redact.URL(o.source)
	if o.source == "" {
		return usagef("no git remote origin to take the source label from: pass --source URL (make image SOURCE=URL)")
	}
	return nil
}

// errNoPin reports a --pin-dir that pins nothing of the image.
var errNoPin = errors.New("no pin of the image")
