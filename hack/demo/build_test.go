package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWaitForControlPlane(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  string // written after a short delay; "" writes nothing
		wantErr string // "" for success
	}{
		{name: "build succeeds while waiting", status: "0\n"},
		{name: "build fails", status: "2\n", wantErr: "exit status 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			build := filepath.Join(t.TempDir(), "kube-build")
			if err := os.WriteFile(build+".log", []byte("compiling\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PINBOT_KUBE_BUILD", build)
			// The build ends while the demo waits: the status is written
			// once the demo has said it waits (its first look found none).
			out, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout := os.Stdout
			os.Stdout = w
			defer func() { os.Stdout = stdout }()
			go func() {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					if strings.Contains(sc.Text(), "Waiting for the build of the control plane") {
						_ = os.WriteFile(build+".status", []byte(tc.status), 0o644)
					}
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err = waitForControlPlane(ctx)
			w.Close()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("waitForControlPlane: %s", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), build+".log")):
				t.Fatalf("waitForControlPlane = %v, want an error with %q naming the log", err, tc.wantErr)
			}
		})
	}
}

func TestWaitForControlPlaneWithoutBuild(t *testing.T) {
	t.Setenv("PINBOT_KUBE_BUILD", "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // would fail if it waited
	if err := waitForControlPlane(ctx); err != nil {
		t.Fatalf("waitForControlPlane without a background build: %s", err)
	}
}
