package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"pinbot.dev/pinbot/internal/imagebuild"
)

// member is one file of an archive: its path inside, its mode and bytes.
type member struct {
	name string
	mode int64
	data []byte
}

// completions are pinbot's shell completion scripts, written by the
// binary of the machine's own platform (compiled for it when the release
// has none): the scripts are the same for every platform.
func (r *release) completions(ctx context.Context, bins []imagebuild.Binary, work string) ([]member, error) {
	host := ""
	for _, b := range bins {
		if b.Platform.OS == runtime.GOOS && b.Platform.Architecture == runtime.GOARCH {
			host = b.Path
		}
	}
	if host == "" {
		built, err := imagebuild.Compile(ctx, imagebuild.CompileOptions{
			Go: r.o.goCmd, Dir: r.o.dir, LDFlags: r.o.ldflags, OutDir: filepath.Join(work, "host"), Stderr: r.stderr,
			Platforms: []v1.Platform{{OS: runtime.GOOS, Architecture: runtime.GOARCH}},
		})
		if err != nil {
			return nil, err
		}
		host = built[0].Path
	}
	var out []member
	for _, sh := range []struct{ shell, file string }{
		{"bash", "pinbot.bash"}, {"zsh", "_pinbot"}, {"fish", "pinbot.fish"},
	} {
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, host, "completion", sh.shell)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("writing the %s completion (pinbot completion %s): %w\n%s", sh.shell, sh.shell, err, stderr.String())
		}
		out = append(out, member{name: path.Join("completions", sh.file), mode: 0o644, data: stdout.Bytes()})
	}
	return out, nil
}

// archive writes NAME.tar.gz for the binary b: a directory NAME holding
// pinbot, LICENSE, README.md and the completions. Every entry has the
// release's time and root's ownership, so one commit gives one archive.
func (r *release) archive(b imagebuild.Binary, shared []member) (string, error) {
	base := r.o.archiveName(b.Platform)
	bin, err := os.ReadFile(b.Path)
	if err != nil {
		return "", err
	}
	members := []member{{name: "pinbot", mode: 0o755, data: bin}}
	for _, doc := range []string{"LICENSE", "README.md"} {
		data, err := os.ReadFile(filepath.Join(r.o.dir, doc))
		if err != nil {
			return "", fmt.Errorf("archiving %s: %w", base, err)
		}
		members = append(members, member{name: doc, mode: 0o644, data: data})
	}
	members = append(members, shared...)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	gz.ModTime = r.o.created
	tw := tar.NewWriter(gz)
	dirs := map[string]bool{}
	for _, m := range members {
		for _, dir := range []string{base, path.Join(base, path.Dir(m.name))} {
			if dirs[dir] || dir == "." {
				continue
			}
			dirs[dir] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o755, ModTime: r.o.created, Format: tar.FormatPAX}); err != nil {
				return "", err
			}
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: path.Join(base, m.name), Mode: m.mode, Size: int64(len(m.data)), ModTime: r.o.created, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return "", err
		}
		if _, err := tw.Write(m.data); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := gz.Close(); err != nil {
		return "", err
	}
	p := filepath.Join(r.o.out, base+".tar.gz")
	r.logf("archive %s", filepath.Base(p))
	return p, os.WriteFile(p, buf.Bytes(), 0o644)
}
