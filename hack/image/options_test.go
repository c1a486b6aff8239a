package main

import (
	"pinbot.dev/pinbot/hack/internal/command"

	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	env := func(epoch string) func(string) string {
		return func(k string) string {
			if k == "SOURCE_DATE_EPOCH" {
				return epoch
			}
			return ""
		}
	}
	type parsed struct {
		Image, PinRepo, Platforms string
		Created                   time.Time
	}
	for _, tc := range []struct {
		name  string
		args  []string
		epoch string
		want  parsed
	}{
		{"defaults", []string{"--image", "127.0.0.1:5000/platform/pinbot:v1"}, "",
			parsed{"127.0.0.1:5000/platform/pinbot:v1", "127.0.0.1:5000/platform/pinbot", "linux/amd64, linux/arm64", time.Unix(0, 0).UTC()}},
		{"pin repo, platforms, epoch", []string{"--image", "127.0.0.1:5000/p/pinbot:v2", "--pin-repo", "gitea.example/platform/pinbot", "--platforms", "linux/arm64, linux/arm/v7"}, "1796128395",
			parsed{"127.0.0.1:5000/p/pinbot:v2", "gitea.example/platform/pinbot", "linux/arm64, linux/arm/v7", time.Unix(1796128395, 0).UTC()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parse(tc.args, env(tc.epoch), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			got := parsed{o.image.String(), o.pinRepo.String(), platformList(o), o.created}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		epoch string
		want  string
	}{
		{"no image", nil, "", "flag --image: want registry/repo:tag"},
		{"digest, not tag", []string{"--image", "r.example/p@sha256:" + strings.Repeat("a", 64)}, "", `flag --image "r.example/p@sha256:`},
		{"bad platform", []string{"--image", "r.example/p:v1", "--platforms", "linux"}, "", `flag --platforms: "linux": want OS/ARCH`},
		{"bad pin repo", []string{"--image", "r.example/p:v1", "--pin-repo", "UPPER/case"}, "", `flag --pin-repo "UPPER/case"`},
		{"bad epoch", []string{"--image", "r.example/p:v1"}, "yesterday", `SOURCE_DATE_EPOCH="yesterday": want whole seconds`},
		{"negative epoch", []string{"--image", "r.example/p:v1"}, "-5", `SOURCE_DATE_EPOCH="-5"`},
		{"argument", []string{"--image", "r.example/p:v1", "extra"}, "", `unexpected argument "extra"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(tc.args, func(string) string { return tc.epoch }, io.Discard)
			var usage *command.UsageError
			if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a usage error containing %q", err, tc.want)
			}
		})
	}
}

// TestRunStopsBeforeCompiling checks that run fails fast, before any
// compile, on a missing CA bundle and on a pin directory that does not pin
// the image.
func TestRunStopsBeforeCompiling(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "ca.crt")
	args := []string{"--image", "127.0.0.1:1/platform/pinbot:v1", "--dir", "../..", "--source", "https://gitea.example/platform/pinbot",
		"--go", "/nonexistent/go"}
	err := run(context.Background(), append(args, "--ca-bundle", missing), io.Discard, io.Discard, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "reading the CA bundle "+missing) {
		t.Errorf("missing CA bundle: error %v, want one naming %s", err, missing)
	}
	// A fake pinbot that lists one pin of another repository.
	pinbot := filepath.Join(t.TempDir(), "pinbot")
	script := "#!/bin/sh\necho '[{\"file\":\"kustomization.yaml\",\"line\":20,\"image\":\"gitea.example/platform/pinbot\"}]'\n"
	if err := os.WriteFile(pinbot, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	err = run(context.Background(), append(args, "--pin-with", pinbot, "--pin-dir", "deploy"), io.Discard, io.Discard, func(string) string { return "" })
	want := "deploy pins no image of 127.0.0.1:1/platform/pinbot, only gitea.example/platform/pinbot (kustomization.yaml:20): set newName in deploy/kustomization.yaml's images: to 127.0.0.1:1/platform/pinbot"
	if !errors.Is(err, errNoPin) || !strings.Contains(err.Error(), want) {
		t.Errorf("unpinned repository: error %v, want errNoPin containing %q", err, want)
	}
}

func TestResolveRedactsTheSource(t *testing.T) {
	o, err := parse([]string{"--image", "127.0.0.1:1/p:v1", "--dir", "../..", "--version", "v1",
		"--source", "https://bot:s3cret-token@gitea.example/platform/pinbot.git"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.resolve(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := "https://gitea.example/platform/pinbot.git"; o.source != want {
		t.Errorf("source label %q, want %q", o.source, want)
	}
}
