package main

import (
	"errors"
	"io"
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
			var usage *usageError
			if !errors.As(err, &usage) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a usage error containing %q", err, tc.want)
			}
		})
	}
}
