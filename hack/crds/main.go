// Command crds copies the real CustomResourceDefinitions of the deployers
// pinbot runs next to (Argo CD's Application, Flux's Kustomization and
// GitRepository) out of their Go modules' source into a directory, for the
// tests to install in the control plane. `make crds` runs it into
// bin/crds:
//
//	go run ./hack/crds -o bin/crds \
//		github.com/argoproj/argo-cd/v3@v3.6.1=manifests/crds/application-crd.yaml ...
//
// Each argument is MODULE@VERSION=PATH, PATH a file of the module. The
// module comes through `go mod download`, so the checksum database vouches
// for it; it is read from the downloaded zip, because the go command
// refuses to extract a module whose go.mod asks for a newer Go than the one
// running, and these modules often do. Nothing is added to pinbot's
// go.mod. Each file is written whole (a temporary file renamed), and a
// VERSIONS file listing the arguments is written last, so its presence
// means the directory is complete.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

func main() {
	out := flag.String("o", "", "directory to write the CRD files into (required)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: crds -o DIR MODULE@VERSION=PATH...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "crds:", err)
		os.Exit(1)
	}
}

// file is one argument: a file of a module at a version.
type file struct {
	module, version, path string
}

func parseArg(arg string) (file, error) {
	mv, p, ok := strings.Cut(arg, "=")
	m, v, ok2 := strings.Cut(mv, "@")
	if !ok || !ok2 || m == "" || v == "" || p == "" || path.IsAbs(p) || strings.HasPrefix(path.Clean(p), "..") {
		return file{}, fmt.Errorf("argument %q: want MODULE@VERSION=PATH, PATH relative to the module", arg)
	}
	return file{module: m, version: v, path: path.Clean(p)}, nil
}

func run(out string, args []string) error {
	if out == "" || len(args) == 0 {
		flag.Usage()
		return errors.New("want -o DIR and at least one MODULE@VERSION=PATH")
	}
	files := make([]file, 0, len(args))
	for _, a := range args {
		f, err := parseArg(a)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", out, err)
	}
	// A stale VERSIONS would vouch for a half-updated directory.
	if err := os.Remove(filepath.Join(out, "VERSIONS")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the old VERSIONS: %w", err)
	}
	zips := map[string]string{}
	for _, f := range files {
		key := f.module + "@" + f.version
		if zips[key] == "" {
			z, err := download(key)
			if err != nil {
				return err
			}
			zips[key] = z
		}
		data, err := readZip(zips[key], key+"/"+f.path)
		if err != nil {
			return err
		}
		dst := filepath.Join(out, path.Base(f.path))
		if err := writeFile(dst, data); err != nil {
			return err
		}
		fmt.Printf("%s: %s of %s (%d bytes)\n", dst, f.path, key, len(data))
	}
	return writeFile(filepath.Join(out, "VERSIONS"), []byte(strings.Join(args, "\n")+"\n"))
}

// download fetches module@version into the module cache and returns the
// path of its zip. It runs outside any module, so no go.mod is touched,
// with $GO as the go command (default "go").
func download(modVersion string) (string, error) {
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, "mod", "download", "-json", modVersion)
	cmd.Dir = os.TempDir()
	// GOTOOLCHAIN=local: a module that wants a newer Go must not make the
	// go command fetch that toolchain; the zip is all this needs.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GO111MODULE=on", "GOTOOLCHAIN=local")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, runErr := cmd.Output()
	var info struct {
		Zip, Sum, Error string
	}
	if err := json.Unmarshal(stdout, &info); err != nil {
		return "", fmt.Errorf("go mod download %s: %w (output %q, stderr %q)", modVersion, errors.Join(runErr, err), stdout, stderr.String())
	}
	// The go command reports a module that wants a newer Go as an error,
	// yet has downloaded and verified its zip: that is all this needs.
	if info.Zip == "" || info.Sum == "" {
		return "", fmt.Errorf("go mod download %s: no verified zip: %s %s", modVersion, info.Error, strings.TrimSpace(stderr.String()))
	}
	return info.Zip, nil
}

// readZip reads one file out of a module zip.
func readZip(zipPath, name string) ([]byte, error) {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", zipPath, err)
	}
	defer zr.Close()
	f, err := zr.Open(name)
	if err != nil {
		return nil, fmt.Errorf("reading %s from %s: %w", name, zipPath, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s from %s: %w", name, zipPath, err)
	}
	return data, nil
}

// writeFile writes data to dst whole: a temporary file in the same
// directory, renamed.
func writeFile(dst string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %w", dst, err)
	}
	return nil
}
