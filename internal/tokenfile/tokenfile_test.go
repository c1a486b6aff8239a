package tokenfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/tokenfile"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		content string // "" with noFile: no file at all
		noFile  bool
		want    string
		err     string // substring after the file name; "" for success
	}{
		{name: "token and newline", content: "0123abcd\n", want: "0123abcd"},
		{name: "CRLF and spaces", content: "  0123abcd\r\n", want: "0123abcd"},
		{name: "blank", content: " \n", err: ": empty, or blank space only: it holds no token"},
		{name: "empty", content: "", err: ": empty, or blank space only"},
		{name: "two lines", content: "secret1\nsecret2\n", err: ": the token holds a line break, a space or a control character (at byte 7)"},
		{name: "a space inside", content: "secret1 secret2", err: ": the token holds a line break"},
		{name: "a NUL inside", content: "secret1\x00secret2", err: "(at byte 7)"},
		{name: "too large", content: strings.Repeat("s", tokenfile.MaxSize+1), err: ": larger than 4096 bytes"},
		{name: "missing", noFile: true, err: "no such file"},
		{name: "a BOM", content: "\ufeff0123abcd\n", want: "0123abcd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if !tc.noFile {
				if err := os.WriteFile(file, []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := tokenfile.Read(file)
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("Read = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Read = %q, want an error", got)
			}
			if msg := err.Error(); !strings.Contains(msg, file) || !strings.Contains(msg, tc.err) {
				t.Errorf("Read error = %q, want it to name %s and say %q", msg, file, tc.err)
			}
			if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "sss") {
				t.Errorf("error quotes the token: %s", err)
			}
		})
	}
}

// TestReadFIFO: a FIFO named as the token file is refused at once,
// not waited on.
func TestReadFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "token")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := tokenfile.Read(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Read(FIFO) = %v, want it refused as not a regular file", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Read blocked on a FIFO")
	}
}
