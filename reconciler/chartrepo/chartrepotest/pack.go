// Package chartrepotest packs charts for tests, as helm package does.
package chartrepotest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"slices"
	"testing"
)

// Pack returns a .tgz of files (path to content; a chart's files sit
// under its name, "web/Chart.yaml"), in path order.
func Pack(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, n := range names {
		body := files[n]
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
