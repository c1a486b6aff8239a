package pprofserve

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"pinbot.dev/pinbot/internal/testenv/poll"
)

// --pprof-listen serves Go's profiles on its own address, and stops with
// the command.
func TestServePprof(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	if err := Serve(ctx, addr); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "# HeapAlloc") {
		t.Fatalf("heap profile: %s %.200s", resp.Status, body)
	}
	cancel()
	poll.Until(t, 5*time.Second, "the endpoint closed", func() (bool, string) {
		_, err := http.Get("http://" + addr + "/debug/pprof/")
		return err != nil, "still answering"
	})
}

func TestPprofAddr(t *testing.T) {
	for in, want := range map[string]string{":6060": "127.0.0.1:6060", "0.0.0.0:6060": "0.0.0.0:6060", "[::1]:6060": "[::1]:6060", "127.0.0.1:0": "127.0.0.1:0"} {
		if got := pprofAddr(in); got != want {
			t.Errorf("pprofAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
