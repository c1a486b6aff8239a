package promote

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestLoadConfigSignatureKeys: the keys a policy names are read from the
// same files as the config, and a key that is missing or not a key is an
// error naming the config's line.
func TestLoadConfigSignatureKeys(t *testing.T) {
	cfg := "signatures:\n  - images: [r.example/*]\n    keys:\n      - keys/cosign.pub\n"
	for _, tc := range []struct {
		name    string
		files   fstest.MapFS
		wantErr string
	}{
		{"missing key", fstest.MapFS{ConfigFile: {Data: []byte(cfg)}}, ".pinbot.yaml:4: signatures[0].keys[0]: key keys/cosign.pub: open keys/cosign.pub"},
		{"not a key", fstest.MapFS{ConfigFile: {Data: []byte(cfg)}, "keys/cosign.pub": {Data: []byte("ssh-ed25519 AAAA")}}, ".pinbot.yaml:4: signatures[0].keys[0]: key keys/cosign.pub: not a PEM public key"},
		{"a directory", fstest.MapFS{ConfigFile: {Data: []byte(cfg)}, "keys/cosign.pub/x": {Data: []byte("x")}}, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfig(tc.files)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("LoadConfig = %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

// TestLoadConfigAttestationKeys: an environment that requires its
// upstream's attestation has its keys loaded from the same files; a
// missing one is an error naming the line of attestationKeys.
func TestLoadConfigAttestationKeys(t *testing.T) {
	cfg := "environments:\n  - name: prod\n    from: staging\n    paths: [\"prod/**\"]\n    requireAttestation: true\n    attestationKeys: [keys/staging.pub]\n    upstreamSoak: 1h\n"
	if _, err := LoadConfig(fstest.MapFS{ConfigFile: {Data: []byte(cfg)}}); err == nil ||
		!strings.Contains(err.Error(), ".pinbot.yaml:6: environment prod's attestationKeys: key keys/staging.pub: open keys/staging.pub") {
		t.Errorf("a missing key: %v", err)
	}
	c, err := LoadConfig(fstest.MapFS{ConfigFile: {Data: []byte(cfg)}, "keys/staging.pub": {Data: testPublicKey(t)}})
	if err != nil {
		t.Fatal(err)
	}
	if k := c.AttestationKeys["prod"]; k == nil || !strings.HasPrefix(k.String(), "SHA256:") {
		t.Errorf("AttestationKeys = %v, want prod's key", c.AttestationKeys)
	}
}

const wavesYAML = "environments:\n  - {name: staging, paths: [envs/staging/**], apps: [web-staging]}\n  - name: prod\n    from: staging\n    waves:\n      - {name: canary, paths: [envs/prod/eu-1/**], apps: [web-eu-1]}\n      - name: rest\n        paths: [%s]\n        apps: [web-us-1]\n"

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    Config
		wantErr string
	}{
		{
			name: "no file",
			want: Config{
				Targets:      []Target{{Name: "default", Paths: []string{"**"}}},
				BranchPrefix: "pinbot/",
				Author:       Author{Name: "pinbot", Email: "pinbot@localhost"},
				Drift:        DriftConfig{Group: GroupImage},
			},
		},
		{
			name: "everything",
			data: `# pinbot settings
targets:
  - name: staging
    paths: ["envs/staging/**"]
  - name: prod
    paths: ["envs/prod/**", "charts/*/values-prod.yaml"]
labels: [pinbot, deploy]
reviewers: [alice]
branchPrefix: bots/pinbot/
author: {name: Release Bot, email: release@example.com}
track:
  - image: registry.example/org/app
    tag: main
    paths: ["envs/staging/**"]
drift:
  minAge: 30m
  group: target
`,
			want: Config{
				Targets: []Target{
					{Name: "staging", Paths: []string{"envs/staging/**"}},
					{Name: "prod", Paths: []string{"envs/prod/**", "charts/*/values-prod.yaml"}},
				},
				Labels:       []string{"pinbot", "deploy"},
				Reviewers:    []string{"alice"},
				BranchPrefix: "bots/pinbot/",
				Author:       Author{Name: "Release Bot", Email: "release@example.com"},
				Track:        []Track{{Image: "registry.example/org/app", Tag: "main", Paths: []string{"envs/staging/**"}}},
				Drift:        DriftConfig{MinAge: 30 * time.Minute, Group: GroupTarget},
			},
		},
		{
			name: "docker hub track is normalised",
			data: "track:\n  - {image: nginx, tag: stable}\n",
			want: Config{
				Targets:      []Target{{Name: "default", Paths: []string{"**"}}},
				BranchPrefix: "pinbot/",
				Author:       Author{Name: "pinbot", Email: "pinbot@localhost"},
				Track:        []Track{{Image: "index.docker.io/library/nginx", Tag: "stable"}},
				Drift:        DriftConfig{Group: GroupImage},
			},
		},
		{name: "unknown field", data: "targets: []\nlabel: [x]\n", wantErr: ".pinbot.yaml:2: field label not found"},
		{name: "unknown nested field", data: "targets:\n  - name: a\n    path: [x]\n", wantErr: ".pinbot.yaml:3: field path not found"},
		{name: "bad yaml", data: "targets: [\n", wantErr: ".pinbot.yaml:"},
		{name: "bad helm form", data: "helm:\n  - chart: web\n    digest: label\n", wantErr: `.pinbot.yaml:3: helm chart web: digest "label": want key, tag or none`},
		{name: "helm entry without chart", data: "helm:\n  - digest: tag\n", wantErr: ".pinbot.yaml:2: helm entry has no chart"},
		{name: "bad target name", data: "targets:\n  - name: Prod\n    paths: [x]\n", wantErr: `.pinbot.yaml:2: target name "Prod"`},
		{name: "duplicate target", data: "targets:\n  - {name: a, paths: [x]}\n  - {name: a, paths: [y]}\n", wantErr: `.pinbot.yaml:3: target "a" defined twice`},
		{name: "target without paths", data: "targets:\n  - name: a\n", wantErr: `.pinbot.yaml:2: target "a" has no paths`},
		{name: "bad glob", data: "targets:\n  - name: a\n    paths:\n      - ok/**\n      - 'bad[/x'\n", wantErr: `.pinbot.yaml:5: path glob "bad[/x"`},
		{name: "absolute glob", data: "targets:\n  - {name: a, paths: [/etc]}\n", wantErr: `.pinbot.yaml:2: path glob "/etc"`},
		{name: "track with tag in image", data: "track:\n  - image: r.example/app:main\n    tag: main\n", wantErr: ".pinbot.yaml:2: track image"},
		{name: "track without tag", data: "track:\n  - image: r.example/app\n", wantErr: ".pinbot.yaml:2: track entry for r.example/app has no tag"},
		{name: "bad group", data: "drift:\n  group: repo\n", wantErr: `.pinbot.yaml:2: drift group "repo"`},
		{name: "bad duration", data: "drift:\n  minAge: soon\n", wantErr: ".pinbot.yaml:2:"},
		{name: "negative age", data: "drift:\n  minAge: -1m\n", wantErr: ".pinbot.yaml:2: drift minAge"},
		{name: "half author", data: "author:\n  name: x\n", wantErr: ".pinbot.yaml:2: author needs both"},
		{name: "bad prefix", data: "branchPrefix: 'a..b/'\n", wantErr: ".pinbot.yaml:1: branchPrefix"},
		{name: "glob out of the tree", data: "targets:\n  - {name: a, paths: ['../../etc/**']}\n", wantErr: `.pinbot.yaml:2: path glob "../../etc/**": want a path inside the repository`},
		{name: "signature rule without a signer", data: "signatures:\n  - images: [r.example/*]\n", wantErr: ".pinbot.yaml:2: signatures[0]: a signature rule needs keys or keyless"},
		{name: "signature key out of the tree", data: "signatures:\n  - images: [r.example/*]\n    keys:\n      - ok.pub\n      - ../k.pub\n", wantErr: `.pinbot.yaml:5: signatures[0].keys[1]: key "../k.pub"`},
		{name: "keyless without a root", data: "signatures:\n  - images: [r.example/*]\n    keyless:\n      - {issuer: i, subject: s}\n", wantErr: ".pinbot.yaml:4: signatures[0].keyless: keyless identities need a trustedRoot"},
		{name: "unknown signature field", data: "signatures:\n  - images: [r.example/*]\n    key: k.pub\n", wantErr: ".pinbot.yaml:3: field key not found"},
		{name: "track glob out of the tree", data: "track:\n  - image: r.example/app\n    tag: main\n    paths: [envs/../../x]\n", wantErr: `.pinbot.yaml:4: path glob`},
		{name: "author name forging a header", data: "author:\n  name: \"pinbot\\ncommitter evil <e@x> 0 +0000\"\n  email: p@x\n", wantErr: ".pinbot.yaml:2: author name"},
		{name: "waves overlapping", data: fmt.Sprintf(wavesYAML, "envs/prod/**"), wantErr: `.pinbot.yaml:8: environment "prod.rest"'s path "envs/prod/**" overlaps environment "prod.canary"'s "envs/prod/eu-1/**"`},
		{name: "wave overlapping staging", data: fmt.Sprintf(wavesYAML, "envs/**"), wantErr: `.pinbot.yaml:8: environment "prod.rest"'s path "envs/**" overlaps environment "staging"'s`},
		{name: "one wave", data: "environments:\n  - name: prod\n    waves:\n      - {name: canary, paths: [a/**], apps: [a]}\n", wantErr: `.pinbot.yaml:4: environment "prod" has one wave`},
		{name: "maxUnproven without clusters", data: fmt.Sprintf(wavesYAML, "envs/prod/us-1/**") + "        maxUnproven: 1\n", wantErr: `.pinbot.yaml:10: environment "prod": wave "rest": maxUnproven needs the wave's clusters`},
		{name: "maxUnproven over 100%", data: fmt.Sprintf(wavesYAML, "envs/prod/us-1/**") + "        clusters: [us-1, us-2]\n        maxUnproven: 120%\n", wantErr: `.pinbot.yaml:11: environment "prod": wave "rest": maxUnproven "120%": over 100%`},
		{name: "waves over one cluster", data: "environments:\n  - name: prod\n    apps: [web]\n    waves:\n      - {name: a, paths: [a/**], clusters: [eu-1]}\n      - {name: b, paths: [b/**], clusters: [eu-1]}\n", wantErr: `.pinbot.yaml:5: environment "prod": every wave names cluster "eu-1" alone`},
		{name: "author email with brackets", data: "author:\n  name: pinbot\n  email: \"p@x> <q@y\"\n", wantErr: ".pinbot.yaml:3: author email"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig(".pinbot.yaml", []byte(tc.data))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTargetsAndTracking(t *testing.T) {
	c, err := ParseConfig(".pinbot.yaml", []byte(`targets:
  - {name: staging, paths: ["envs/staging/**"]}
  - {name: prod, paths: ["envs/prod/**", "charts/*/values-prod.yaml"]}
  - {name: rest, paths: ["**"]}
track:
  - {image: r.example/app, tag: main, paths: ["envs/staging/**"]}
  - {image: r.example/app, tag: stable}
`))
	if err != nil {
		t.Fatal(err)
	}
	targets := []struct{ file, want string }{
		{"envs/staging/app.yaml", "staging"},
		{"envs/staging/deep/er/app.yaml", "staging"},
		{"envs/prod/app.yaml", "prod"},
		{"charts/app/values-prod.yaml", "prod"},
		{"charts/app/sub/values-prod.yaml", "rest"},
		{"envs/stagingx/app.yaml", "rest"},
		{"Dockerfile", "rest"},
	}
	for _, tc := range targets {
		if got := c.TargetOf(tc.file); got != tc.want {
			t.Errorf("TargetOf(%q) = %q, want %q", tc.file, got, tc.want)
		}
	}
	tracks := []struct{ image, file, want string }{
		{"r.example/app", "envs/staging/a.yaml", "main"},
		{"r.example/app", "envs/prod/a.yaml", "stable"},
		{"r.example/other", "envs/prod/a.yaml", ""},
	}
	for _, tc := range tracks {
		if got := c.TrackedTag(tc.image, tc.file); got != tc.want {
			t.Errorf("TrackedTag(%q, %q) = %q, want %q", tc.image, tc.file, got, tc.want)
		}
	}
}

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		pattern, file string
		want          bool
	}{
		{"**", "a/b/c.yaml", true},
		{"**/*.yaml", "c.yaml", true},
		{"**/*.yaml", "a/b/c.yaml", true},
		{"**/*.yaml", "a/b/c.yml", false},
		{"a/**/c.yaml", "a/c.yaml", true},
		{"a/**/c.yaml", "a/x/y/c.yaml", true},
		{"a/*/c.yaml", "a/x/y/c.yaml", false},
		{"a/*", "a/x", true},
		{"a/*", "a/x/y", false},
		{"envs/prod/**", "envs/production/x", false},
	}
	for _, tc := range tests {
		if got := matchGlob(tc.pattern, tc.file); got != tc.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", tc.pattern, tc.file, got, tc.want)
		}
	}
}

// testPublicKey is a fresh ECDSA public key, PEM.
func testPublicKey(t *testing.T) []byte {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}
