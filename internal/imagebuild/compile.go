package imagebuild

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// DefaultPlatforms are the platforms `make image` builds.
var DefaultPlatforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64"},
}

// CompileOptions say how to build pinbot's binaries.
type CompileOptions struct {
	// Go is the go command; default "go".
	Go string
	// Dir is the module directory the build runs in; default the current
	// directory.
	Dir string
	// Package is the main package; default "./cmd/pinbot".
	Package string
	// Platforms to build for; default DefaultPlatforms.
	Platforms []v1.Platform
	// LDFlags are passed to -ldflags, such as the version's -X.
	LDFlags string
	// Name names the binaries; default "pinbot".
	Name string
	// OutDir receives one binary per platform, named NAME-OS-ARCH.
	OutDir string
	// Stderr receives the go command's output; default discarded (it is
	// quoted in the error of a failed build).
	Stderr io.Writer
}

// Compile builds static binaries (CGO_ENABLED=0, -trimpath) of o.Package,
// one platform after the other: each build uses every processor already.
func Compile(ctx context.Context, o CompileOptions) ([]Binary, error) {
	if o.Go == "" {
		o.Go = "go"
	}
	if o.Package == "" {
		o.Package = "./cmd/pinbot"
	}
	if len(o.Platforms) == 0 {
		o.Platforms = DefaultPlatforms
	}
	if o.Name == "" {
		o.Name = "pinbot"
	}
	if o.OutDir == "" {
		return nil, fmt.Errorf("compiling %s: no output directory", o.Package)
	}
	var out []Binary
	for _, p := range o.Platforms {
		if p.OS == "" || p.Architecture == "" {
			return nil, fmt.Errorf("compiling %s: platform %q: want OS and architecture", o.Package, p.String())
		}
		bin := filepath.Join(o.OutDir, o.Name+"-"+p.OS+"-"+p.Architecture+variantSuffix(p))
		cmd := exec.CommandContext(ctx, o.Go, "build", "-trimpath", "-ldflags", o.LDFlags, "-o", bin, o.Package)
		cmd.Dir = o.Dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
		if v, ok := goarm(p); ok {
			cmd.Env = append(cmd.Env, "GOARM="+v)
		}
		var msg bytes.Buffer
		cmd.Stdout = &msg
		cmd.Stderr = &msg
		if o.Stderr != nil {
			cmd.Stdout = io.MultiWriter(&msg, o.Stderr)
			cmd.Stderr = cmd.Stdout
		}
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("compiling %s for %s: %w\n%s", o.Package, p.String(), err, strings.TrimSpace(lastLines(msg.String(), 20)))
		}
		out = append(out, Binary{Platform: p, Path: bin})
	}
	return out, nil
}

// variantSuffix names a platform's variant in a file name.
func variantSuffix(p v1.Platform) string {
	if p.Variant == "" {
		return ""
	}
	return "-" + p.Variant
}

// goarm returns GOARM for a 32-bit arm variant such as "v7".
func goarm(p v1.Platform) (string, bool) {
	if p.Architecture != "arm" || !strings.HasPrefix(p.Variant, "v") {
		return "", false
	}
	return strings.TrimPrefix(p.Variant, "v"), true
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
