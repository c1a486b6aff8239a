package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"pinbot.dev/pinbot/reconciler/verdict"
)

// issueExample is the config from the issue's contract.
const issueExample = `interval: 60s
forge: {url: https://gitea.example, tokenFile: /etc/pinbot/token, caFile: /etc/pinbot/ca.pem}  # optional
apps:
  - name: web
    repo: https://gitea.example/org/manifests.git
    branch: main
    path: envs/prod
    namespace: web
    allowNamespaces: [web]
    auth: {tokenFile: /etc/pinbot/token, caFile: /etc/pinbot/ca.pem}
    syncPolicy: {automated: false, selfHeal: false, prune: false, allowEmpty: false}
`

func TestParse(t *testing.T) {
	got, err := Parse("pinbot.yaml", []byte(issueExample))
	if err != nil {
		t.Fatalf("Parse: %s", err)
	}
	want := &Config{
		Interval:       Duration(60 * time.Second),
		StateNamespace: DefaultStateNamespace,
		Forge:          &ForgeConfig{URL: "https://gitea.example", TokenFile: "/etc/pinbot/token", CAFile: "/etc/pinbot/ca.pem"},
		Apps: []App{{
			Name: "web", Repo: "https://gitea.example/org/manifests.git", Branch: "main", Path: "envs/prod",
			Namespace: "web", AllowNamespaces: []string{"web"},
			Auth:          &Auth{TokenFile: "/etc/pinbot/token", CAFile: "/etc/pinbot/ca.pem"},
			VerifyTimeout: Duration(DefaultVerifyTimeout),
			WaveTimeout:   Duration(DefaultWaveTimeout),
			DriftWar:      DriftWar{Limit: DefaultDriftWarLimit, Window: Duration(DefaultDriftWarWindow)},
		}},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Config{}, App{})); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}

func TestParseForgePlainHTTP(t *testing.T) {
	app := "apps:\n  - {name: web, repo: 'https://g.example/o/r.git', namespace: web}\n"
	for _, forge := range []string{
		"forge: {url: 'http://127.0.0.1:3000'}\n",
		"forge: {url: 'http://localhost:3000'}\n",
		"forge: {url: 'https://gitea.example'}\n",
		"forge: {url: 'http://gitea.example', insecure: true}\n",
	} {
		if _, err := Parse("c.yaml", []byte(forge+app)); err != nil {
			t.Errorf("Parse of %q: %s", forge, err)
		}
	}
}

func TestParseDefaults(t *testing.T) {
	got, err := Parse("c.yaml", []byte("apps:\n- {name: a, repo: 'http://127.0.0.1:3000/o/r.git', namespace: a}\n"))
	if err != nil {
		t.Fatalf("Parse: %s", err)
	}
	a := got.Apps[0]
	if time.Duration(got.Interval) != DefaultInterval || a.Branch != DefaultBranch || a.Path != "." ||
		a.SyncPolicy.Automated || !cmp.Equal(a.AllowNamespaces, []string{"a"}) {
		t.Errorf("defaults not applied: interval %s, app %+v", time.Duration(got.Interval), a)
	}
}

func TestParseErrors(t *testing.T) {
	app := "  - {name: web, repo: 'https://g.example/o/r.git', namespace: web}\n"
	for _, tc := range []struct {
		name, config string
		want         []string // substrings of the error
	}{
		{"unknown top-level field", "intervall: 5s\napps:\n" + app, []string{`c.yaml:1: unknown field "intervall"`}},
		{"unknown app field", "apps:\n  - name: web\n    repo: https://g.example/o/r.git\n    namespace: web\n    prun: true\n", []string{`c.yaml:5: unknown field "prun"`}},
		{"unknown syncPolicy field", "apps:\n  - name: web\n    repo: https://g.example/o/r.git\n    namespace: web\n    syncPolicy: {automatic: true}\n", []string{`c.yaml:5: unknown field "automatic"`}},
		{"bad interval", "interval: 5\napps:\n" + app, []string{`c.yaml:1: want a duration such as 60s, got "5"`}},
		{"short interval", "interval: 10ms\napps:\n" + app, []string{"c.yaml:1: interval 10ms: want at least 1s"}},
		{"negative interval", "apps:\n" + app + "interval: -5s\n", []string{"c.yaml:3: interval -5s: want at least 1s"}},
		{"credentials in the forge URL", "forge:\n  url: 'https://bot:hunter2@gitea.example'\napps:\n" + app, []string{"c.yaml:2: forge.url", "put no credentials in the URL"}},
		{"forge URL that does not parse", "forge:\n  url: 'https://bot:hun ter2@gitea.example:99999'\napps:\n" + app, []string{"c.yaml:2: forge.url"}},
		{"no apps", "interval: 5s\n", []string{"c.yaml: no apps"}},
		{"bad mirror", "mirrors:\n  - {from: docker.io, to: 'Mirror Host/x'}\napps:\n" + app, []string{`c.yaml:2: mirrors[0].to "Mirror Host/x": want a registry host or repository prefix (not a valid registry host and path)`}},
		{"empty", "", []string{"c.yaml: empty config"}},
		{"verifySignatures without a policy", "apps:\n  - {name: web, repo: 'https://g.example/o/r.git', namespace: web, verifySignatures: true}\n",
			[]string{`c.yaml:2: app "web": verifySignatures needs a signatures: policy`}},
		{"signature key outside", "signatures:\n  - images: [r.example/*]\n    keys: [/etc/k.pub]\napps:\n" + app, []string{`c.yaml:3: signatures[0].keys[0]: key "/etc/k.pub": want a path relative`}},
		{"cluster without a Secret", "apps:\n  - name: web\n    repo: https://g.example/o/r.git\n    namespace: web\n    cluster:\n      kubeConfig:\n        secretRef: {key: value}\n",
			[]string{`c.yaml:7: app "web": cluster.kubeConfig.secretRef.name "": want a Secret's name`}},
		{"syntax", "apps: [\n", []string{"c.yaml:"}},
		{"missing fields", "apps:\n  - name: Web_1\n", []string{
			`c.yaml:2: app "Web_1": name: want a DNS-1123 label`,
			`c.yaml:2: app "Web_1": repo "": want an http, https or file URL`,
			`c.yaml:2: app "Web_1": namespace "": want a namespace name`,
		}},
		{"namespace outside allow-list", "apps:\n  - {name: web, repo: 'https://g.example/o/r.git', namespace: web, allowNamespaces: [api]}\n",
			[]string{`c.yaml:2: app "web": namespace "web" is not in allowNamespaces [api]`}},
		{"path escapes", "apps:\n  - {name: web, repo: 'https://g.example/o/r.git', namespace: web, path: ../x}\n",
			[]string{`path "../x": want a relative path inside the repository`}},
		{"absolute path", "apps:\n  - {name: web, repo: 'https://g.example/o/r.git', namespace: web, path: /etc}\n",
			[]string{`path "/etc"`}},
		{"duplicate", "apps:\n" + app + app, []string{`c.yaml:3: app "web": defined twice`}},
		{"bad cluster-scoped", "apps:\n  - {name: web, repo: 'https://g.example/o/r.git', namespace: web, allowClusterScoped: [a/b/c]}\n",
			[]string{`allowClusterScoped: "a/b/c"`}},
		{"bad forge", "forge: {url: gitea.example}\napps:\n" + app, []string{`forge.url "gitea.example": want an http(s) URL`}},
		{"cleartext forge", "forge: {url: 'http://192.0.2.2:3000'}\napps:\n" + app, []string{`forge.url "http://192.0.2.2:3000": plain HTTP to a host that is not loopback would send the token in clear`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.config))
			if err == nil {
				t.Fatalf("Parse succeeded, want error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "hun ter2") {
				t.Errorf("error %q shows the URL's password", err)
			}
		})
	}
}

// TestParseErrorsClipped: a value echoed in an error is clipped, so a
// 5,000-character value gives a short message.
func TestParseErrorsClipped(t *testing.T) {
	long := strings.Repeat("x", 5000)
	_, err := Parse("c.yaml", []byte("apps:\n  - {name: web, repo: '"+long+"', namespace: '"+long+"', path: '/"+long+"'}\n"))
	if err == nil {
		t.Fatal("Parse succeeded")
	}
	if n := len(err.Error()); n > 1000 || !strings.Contains(err.Error(), "(5000 bytes)") {
		t.Errorf("error of %d bytes, want the values clipped: %.300s", n, err)
	}
}

func TestLoadResolvesRelativePaths(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pinbot.yaml")
	cfg := "forge: {url: 'https://g.example', tokenFile: token}\napps:\n  - {name: web, repo: 'https://g.example/o/r.git', namespace: web, auth: {tokenFile: app-token, caFile: /abs/ca.pem}}\n"
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(file)
	if err != nil {
		t.Fatalf("Load: %s", err)
	}
	got := []string{c.Forge.TokenFile, c.Apps[0].Auth.TokenFile, c.Apps[0].Auth.CAFile}
	want := []string{filepath.Join(dir, "token"), filepath.Join(dir, "app-token"), "/abs/ca.pem"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if _, err := c.App("nope"); err == nil || !strings.Contains(err.Error(), `no app "nope" (apps: web)`) {
		t.Errorf("App(nope) = %v, want an error listing the apps", err)
	}
}

func TestMirrorRules(t *testing.T) {
	c, err := Parse("c.yaml", []byte("mirrors:\n  - {from: docker.io, to: 'mirror.local:5000/hub/'}\n  - {from: ghcr.io/org, to: mirror.local:5000/ghcr}\napps:\n  - {name: web, repo: 'https://g.example/o/r.git', namespace: web}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []verdict.Mirror{{From: "index.docker.io/", To: "mirror.local:5000/hub/"}, {From: "ghcr.io/org/", To: "mirror.local:5000/ghcr/"}}
	if diff := cmp.Diff(want, c.Rules()); diff != "" {
		t.Errorf("Rules (-want +got):\n%s", diff)
	}
}

// TestLoadRefusesWhatIsNotAConfigFile: a config path that links to
// /dev/zero, or names a FIFO, is refused at once, naming it.
func TestLoadRefusesWhatIsNotAConfigFile(t *testing.T) {
	dir := t.TempDir()
	zero := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{zero, fifo} {
		if _, err := Load(file); err == nil || !strings.Contains(err.Error(), file+": not a regular file") {
			t.Errorf("Load(%s) = %v, want it refused as not a regular file", file, err)
		}
	}
}
