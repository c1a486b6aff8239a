package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// waitForControlPlane waits for the control plane's background build when
// `make demo` started one: PINBOT_KUBE_BUILD names its files, <it>.log for
// the output and <it>.status for the exit code, written when it ends. The
// promote half of the demo needs only Gitea, so it runs while etcd,
// kube-apiserver and kube-controller-manager still compile. Without the
// variable the binaries are expected in bin/ already.
func waitForControlPlane(ctx context.Context) error {
	build := os.Getenv("PINBOT_KUBE_BUILD")
	if build == "" {
		return nil
	}
	logFile, statusFile := build+".log", build+".status"
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	announced, lastNote := false, time.Now()
	for {
		raw, err := os.ReadFile(statusFile)
		switch {
		case err == nil && strings.TrimSpace(string(raw)) == "0":
			if announced {
				fmt.Printf("control plane built; waited %s\n", time.Since(start).Round(time.Second))
			}
			return nil
		case err == nil:
			return fmt.Errorf("building the control plane failed (exit status %s); its output is in %s",
				strings.TrimSpace(string(raw)), logFile)
		case !os.IsNotExist(err):
			return fmt.Errorf("reading the control plane build's status: %w", err)
		}
		if !announced {
			banner("Waiting for the control plane build that `make demo` started (first run only)")
			fmt.Printf("output: %s\n", logFile)
			announced = true
		}
		if time.Since(lastNote) >= 30*time.Second {
			fmt.Printf("   %s\n", lastLine(logFile))
			lastNote = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// lastLine returns the last non-empty line of a file, or a note that it has
// none yet.
func lastLine(path string) string {
	raw, _ := os.ReadFile(path)
	lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
	if last := strings.TrimSpace(string(lines[len(lines)-1])); last != "" {
		return last
	}
	return "(no output yet)"
}
