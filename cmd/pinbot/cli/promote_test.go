package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPromoteDriftUsage checks the flag combinations that are bad usage
// (exit 2, naming the flag) before anything touches the network. The
// commands themselves run against a real Gitea in TestPromoteDriftCommands.
func TestPromoteDriftUsage(t *testing.T) {
	const (
		forge = "--forge-url=http://127.0.0.1:1"
		repo  = "--repo=org/manifests"
		d     = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	)
	missing := filepath.Join(t.TempDir(), "missing")
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badDigest := filepath.Join(t.TempDir(), "digest")
	if err := os.WriteFile(badDigest, []byte("sha256:12\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	twoLines := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(twoLines, []byte("secret1\nsecret2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "no input", args: []string{"promote", forge, repo}, code: 2, want: "no input: give exactly one of --image REF:TAG"},
		{name: "two inputs", args: []string{"promote", forge, repo, "--image=r.example/app", "--digest=" + d, "--metadata-file=m.json"}, code: 2, want: "give exactly one of"},
		{name: "image without tag", args: []string{"promote", forge, repo, "--image=r.example/app"}, code: 2, want: "flag --image r.example/app: name a tag"},
		{name: "bad digest", args: []string{"promote", forge, repo, "--image=r.example/app", "--digest=sha256:12"}, code: 2, want: "flag --digest"},
		{name: "no forge", args: []string{"promote", repo, "--image=r.example/app:v1"}, code: 2, want: "flag --forge-url: required"},
		{name: "credentials in the forge URL", args: []string{"promote", "--forge-url=https://u:secret@gitea.example", repo, "--image=r.example/app:v1"}, code: 2, want: "put no credentials in the URL"},
		{name: "plain HTTP to a remote forge", args: []string{"promote", "--forge-url=http://192.0.2.2:5611", repo, "--image=r.example/app:v1"}, code: 2,
			want: "flag --forge-url http://192.0.2.2:5611: plain HTTP to a host that is not loopback would send the token in clear; use https, or pass --insecure-forge"},
		{name: "drift plain HTTP to a remote forge", args: []string{"drift", "--forge-url=http://gitea.example", repo}, code: 2, want: "pass --insecure-forge"},
		{name: "plain HTTP to a remote forge allowed", args: []string{"promote", "--forge-url=http://192.0.2.2:5611", "--insecure-forge", repo, "--image=r.example/app:v1", "--token-file=" + missing}, code: 1,
			want: `level=WARN msg="--insecure-forge: the Gitea token goes over plain HTTP, readable on the network" forge=http://192.0.2.2:5611`},
		{name: "bad repo", args: []string{"promote", forge, "--repo=manifests", "--image=r.example/app:v1"}, code: 2, want: "flag --repo"},
		{name: "bad platform", args: []string{"promote", forge, repo, "--image=r.example/app:v1", "--platform=linux"}, code: 2, want: "flag --platform"},
		{name: "no token", args: []string{"promote", forge, repo, "--image=r.example/app:v1"}, code: 2, want: "no Gitea token: pass --token-file FILE or set $PINBOT_GITEA_TOKEN"},
		{name: "missing token file", args: []string{"promote", forge, repo, "--image=r.example/app:v1", "--token-file=" + missing}, code: 1, want: "flag --token-file: reading token file: open " + missing},
		{name: "token file of two lines", args: []string{"promote", forge, repo, "--image=r.example/app:v1", "--token-file=" + twoLines}, code: 1, want: "flag --token-file: token file " + twoLines + ": the token holds a line break"},
		{name: "empty token file", args: []string{"promote", forge, repo, "--image=r.example/app:v1", "--token-file=" + empty}, code: 2, want: "flag --token-file: token file " + empty + ": empty, or blank space only"},
		{name: "missing digest file", args: []string{"promote", forge, repo, "--image=r.example/app", "--digest-file=" + missing}, code: 2, want: "reading digest file"},
		{name: "bad digest in the digest file", args: []string{"promote", forge, repo, "--image=r.example/app", "--digest-file=" + badDigest}, code: 2, want: badDigest + ":1:"},
		{name: "a FIFO as the token file", args: []string{"promote", forge, repo, "--image=r.example/app:v1", "--token-file=" + fifo}, code: 1, want: "not a regular file"},
		{name: "credentials in a forge URL that does not parse", args: []string{"promote", "--forge-url=https://u:secret pass@gitea.example:99999", repo, "--image=r.example/app:v1"}, code: 2, want: "flag --forge-url"},
		{name: "token as a flag value", args: []string{"promote", forge, repo, "--image=r.example/app:v1", "--token=abc"}, code: 2, want: "unknown flag: --token"},
		{name: "drift bad group", args: []string{"drift", forge, repo, "--group=repo"}, code: 2, want: `flag --group "repo"`},
		{name: "drift bad schedule", args: []string{"drift", forge, repo, "--schedule=every now and then"}, code: 2, want: "flag --schedule"},
		{name: "drift negative age", args: []string{"drift", forge, repo, "--min-age=-1m"}, code: 2, want: "flag --min-age"},
		{name: "drift bad concurrency", args: []string{"drift", forge, repo, "--concurrency=0"}, code: 2, want: "flag --concurrency"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tokenEnv, "")
			var out, errOut bytes.Buffer
			code := Execute(context.Background(), tc.args, &out, &errOut)
			if code != tc.code || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut.String(), tc.code, tc.want)
			}
			if strings.Contains(out.String()+errOut.String(), "secret") {
				t.Error("a credential reached the output")
			}
		})
	}
}

// TestJSONErrorObject: under -o json every failing command prints one
// JSON object with the error on stdout, besides the message on stderr.
func TestJSONErrorObject(t *testing.T) {
	t.Setenv(tokenEnv, "")
	missing := filepath.Join(t.TempDir(), "missing")
	for _, args := range [][]string{
		{"pins", "list", "--dir", missing},
		{"promote", "--forge-url=http://127.0.0.1:1", "--repo=o/n", "--image=r.example/app", "--digest-file=" + missing},
		{"drift", "--forge-url=http://127.0.0.1:1", "--repo=o/n", "--group=repo"},
		{"status", "--config", missing},
		{"verify", "--config", missing},
		{"resolve", "not a reference"},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			code, stdout, stderr := run(t, append(args, "-o", "json")...)
			if code == 0 {
				t.Fatalf("exit 0, want a failure")
			}
			var got struct {
				Error string `json:"error"`
			}
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil || got.Error == "" {
				t.Errorf("stdout %q holds no JSON error object (%v); stderr %q", stdout, err, stderr)
			}
		})
	}
}
