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
// `make demo` started one (PINBOT_KUBE_BUILD, see waitForBuild). The
// promote half of the demo needs only Gitea, so it runs while etcd,
// kube-apiserver and kube-controller-manager still compile.
func waitForControlPlane(ctx context.Context) error {
	return waitForBuild(ctx, "the control plane", "PINBOT_KUBE_BUILD")
}

// waitForGitea waits for Gitea's background build when `make demo`
// started one (PINBOT_GITEA_BUILD): the offline step runs while it
// compiles.
func waitForGitea(ctx context.Context) error {
	return waitForBuild(ctx, "Gitea", "PINBOT_GITEA_BUILD")
}

// waitForBuild waits for a background build `make demo` started: the
// variable env names its files, <it>.log for the output and <it>.status
// for the exit code, written when it ends. Without the variable the
// binaries are expected in bin/ already.
func waitForBuild(ctx context.Context, what, env string) error {
	build := os.Getenv(env)
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
				fmt.Printf("%s built; waited %s\n", what, time.Since(start).Round(time.Second))
			}
			return nil
		case err == nil:
			return fmt.Errorf("building %s failed (exit status %s); its output is in %s",
				what, strings.TrimSpace(string(raw)), logFile)
		case !os.IsNotExist(err):
			return fmt.Errorf("reading the status of the build of %s: %w", what, err)
		}
		if !announced {
			banner("Waiting for the build of " + what + " that `make demo` started (first run only)")
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
