// Package pinbot_test holds the module-wide layering test, after
// go-containerregistry's depcheck: the folder names promise an
// architecture, and this test keeps the imports honest to it.
package pinbot_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "pinbot.dev/pinbot"

// The leaves every package may share: one job each, stdlib or a narrow
// dependency, none of them I/O of their own.
var leaves = []string{"internal/imageref", "internal/commitid", "internal/redact", "internal/logctx", "internal/clip", "internal/loopback", "internal/httpbound", "internal/retry", "internal/filelock",
	"internal/private", "internal/confined", "internal/peermetrics", "internal/jsonkeys", "internal/capool", "internal/opfile", "internal/commitstatus", "internal/buildinfo", "internal/coalesce", "internal/kubeclient", "internal/globs", "internal/tokenfile", "internal/sealkey", "internal/podspec"}

// proofWords are the proof's vocabulary (a verification, its verdicts,
// health and containers, what a signed attestation of it says, the
// clusters a wave proves it on and the windows it may not move in),
// which the release chain judges.
var proofWords = []string{"reconciler/verdict", "reconciler/object", "internal/clip", "internal/imageref", "trust/proven", "release/clusters", "release/freeze"}

// pure are the reconciler's decisions: their module dependencies are
// pure too (the leaves, render's error type excepted).
var pure = []string{"reconciler/object", "reconciler/ignore", "reconciler/verdict", "reconciler/deployer", "reconciler/config",
	"reconciler/guard", "reconciler/hook", "reconciler/wave", "reconciler/prune", "reconciler/diff", "reconciler/heal",
	"reconciler/status", "reconciler/history", "reconciler/settle", "release", "release/assess", "promote/pr"}

// core is what the reconciler's config, and every decision above it, may
// build on: the objects, the verdict core and the leaves they need.
var core = []string{"reconciler/deployer", "reconciler/ignore", "reconciler/object", "reconciler/verdict", "trust/policy", "trust/proven",
	"internal/imageref", "internal/loopback", "internal/clip", "internal/redact", "internal/opfile", "internal/commitstatus", "internal/buildinfo"}

// above is core and the decisions a package sits above.
func above(core []string, pkgs ...string) []string { return append(slices.Clone(core), pkgs...) }

// allowed is the allow-list of each package (a path below the module;
// "x/..." is x and its subpackages): the module packages it may depend
// on, directly or not. A package missing from it fails the test, so a new
// package must say where it sits.
var allowed = map[string][]string{
	"internal/imageref": {"internal/clip"},
	"internal/redact":   {},
	// The commit-status states every package posts or reads.
	"internal/commitstatus": {},
	"internal/logctx":       {},
	// A job on a cron schedule (serve's and the CLI's drift).
	"internal/crontab":     {"internal/logctx"},
	"internal/clip":        {},
	"internal/loopback":    {},
	"internal/httpbound":   {},
	"internal/filelock":    {},
	"internal/private":     {},
	"internal/confined":    {},
	"internal/peermetrics": {},
	"internal/jsonkeys":    {},
	"internal/capool":      {},
	"internal/commitid":    {},
	"internal/memlimit":    {"internal/logctx"},
	"internal/kubemetrics": {},
	"internal/opfile":      {},
	// A bearer token from a file or the environment.
	"internal/tokenfile": {"internal/opfile", "internal/redact"},
	// The key that seals what pinbot writes in ConfigMaps.
	"internal/sealkey":    {},
	"internal/podspec":    {},
	"internal/gctune":     {"internal/logctx"},
	"internal/pprofserve": {"internal/logctx"},
	"internal/buildinfo":  {},
	"internal/coalesce":   {},
	"internal/globs":      {},
	"internal/kubeclient": {"internal/logctx"},
	"internal/retry":      {"internal/logctx", "internal/redact"},
	"internal/logsink":    {"internal/redact"},
	// The release's images: their provenance is attached, and signed,
	// through trust/sign.
	"internal/imagebuild": {"internal/redact", "trust/sign"},

	"pins":     {"internal/imageref", "internal/filelock", "internal/private", "internal/confined", "internal/clip"},
	"registry": leaves,
	"gitforge": leaves,
	"render":   {"internal/confined"},
	// promote reaches the proof's vocabulary only through release.
	"promote": append([]string{"pins", "registry", "gitforge", "render", "release", "release/waves", "trust", "trust/policy", "trust/proven", "trust/attest", "trust/sign", "promote/pr"}, append(proofWords, leaves...)...),
	// What a pull request says: pure, no client.
	"promote/pr":       append([]string{"release", "internal/globs", "trust/policy", "trust/proven", "internal/imageref", "internal/clip", "internal/jsonkeys", "internal/commitstatus", "internal/commitid", "internal/redact"}, proofWords...),
	"promote/ciinput":  append([]string{"promote", "pins", "registry", "gitforge", "render", "release", "release/waves", "trust", "trust/policy", "trust/proven", "trust/attest", "trust/sign", "promote/pr"}, append(proofWords, leaves...)...),
	"promote/feeds":    append([]string{"promote", "pins", "registry", "gitforge", "render", "release", "release/waves", "trust", "trust/policy", "trust/proven", "trust/attest", "trust/sign", "promote/pr"}, append(proofWords, leaves...)...),
	"promote/helmform": append([]string{"promote", "pins", "registry", "gitforge", "render", "release", "release/waves", "trust", "trust/policy", "trust/proven", "trust/attest", "trust/sign", "promote/pr"}, append(proofWords, leaves...)...),

	// The signature policy: it reads signatures through the registry and
	// decides with sigstore-go; promote and the reconciler ask it.
	"trust":        append([]string{"registry", "trust/policy", "trust/proven"}, leaves...),
	"trust/policy": {"trust/proven"},
	// pinbot's proven-running predicate and what passes: a leaf the
	// policy, the attestation and the release chain share.
	"trust/proven": {},
	// Signing as cosign does: a key, bundles, referrers; no policy.
	"trust/sign":      {"internal/redact"},
	"trust/trusttest": {"trust/sign", "internal/redact"},
	// pinbot's "proven running" attestation: written with trust/sign,
	// read back through trust's verification; nothing of the release.
	"trust/attest": append([]string{"trust", "trust/sign", "trust/policy", "trust/proven", "registry"}, leaves...),

	// The release chain: pure decisions, their store in the cluster, and
	// the gate other tools ask.
	// It judges the reconciler's verifications in their own types.
	"release": append([]string{"internal/globs", "internal/imageref", "internal/clip", "internal/jsonkeys", "internal/commitstatus"}, proofWords...),
	// What the cluster may run in an environment: the admission
	// webhook's decision, from a ledger, pure.
	// What an environment shows of an image, judged from its apps' reports.
	"release/clusters":     {}, // the clusters a wave names, and how many may be unproven: stdlib only
	"release/freeze":       {}, // change windows: cron's schedule, nothing of pinbot
	"release/waves":        append([]string{"release", "internal/globs", "internal/imageref", "internal/clip", "internal/jsonkeys", "internal/commitstatus"}, proofWords...),
	"release/assess":       append([]string{"release", "internal/globs", "internal/imageref", "internal/clip", "internal/jsonkeys", "internal/commitstatus"}, proofWords...),
	"release/store":        append([]string{"release", "internal/globs", "internal/imageref", "internal/clip", "internal/jsonkeys", "internal/commitstatus", "internal/sealkey"}, proofWords...),
	"release/chainmetrics": append([]string{"release", "release/proofapi", "internal/globs", "internal/imageref", "internal/clip", "internal/jsonkeys", "internal/loopback", "internal/commitstatus"}, proofWords...),
	"release/proofapi":     append([]string{"release", "internal/globs", "internal/imageref", "internal/clip", "internal/jsonkeys", "internal/loopback", "internal/commitstatus"}, proofWords...),

	// The reconciler's leaves and decisions, bottom up.
	"reconciler/object":   {},
	"reconciler/ssa":      {"reconciler/object", "internal/coalesce"},
	"reconciler/ignore":   {"reconciler/object"},
	"reconciler/verdict":  {"reconciler/object", "internal/imageref", "internal/clip"},
	"reconciler/deployer": {"reconciler/object", "reconciler/verdict", "internal/imageref", "internal/clip"},
	"reconciler/config":   core,
	"reconciler/guard":    above(core, "reconciler/config"),
	"reconciler/hook":     above(core, "reconciler/config", "reconciler/guard"),
	"reconciler/wave":     above(core, "reconciler/config", "reconciler/guard", "reconciler/hook"),
	"reconciler/prune":    above(core, "reconciler/config", "reconciler/guard", "reconciler/hook", "reconciler/wave"),
	"reconciler/diff":     above(core, "reconciler/config", "reconciler/guard", "reconciler/hook"),
	"reconciler/heal":     above(core, "reconciler/config", "reconciler/guard", "reconciler/hook", "reconciler/diff"),
	"reconciler/status":   above(core, "reconciler/config", "reconciler/guard", "reconciler/hook", "reconciler/diff"),
	"reconciler/history":  above(core, "reconciler/config", "reconciler/guard", "reconciler/hook", "reconciler/diff", "reconciler/status"),
	"reconciler/settle":   above(core, "reconciler/config", "reconciler/guard", "reconciler/hook", "reconciler/diff", "reconciler/status", "reconciler/history"),
	"reconciler/record":   above(core, "reconciler/config", "reconciler/guard", "reconciler/hook", "reconciler/diff", "reconciler/status", "reconciler/history", "internal/jsonkeys", "internal/logctx", "internal/sealkey"),
	"reconciler/metrics":  above(core, "reconciler/config", "reconciler/guard", "reconciler/hook", "reconciler/diff", "reconciler/status", "reconciler/history", "reconciler/record", "internal/jsonkeys", "internal/logctx", "internal/sealkey"),
	// The reconciler orchestrates them; it knows nothing of promotion.
	"reconciler": append([]string{"reconciler/...", "gitforge", "registry", "render", "trust", "trust/policy", "trust/proven"}, leaves...),

	"dashboard": append([]string{"gitforge", "reconciler/...", "release", "release/clusters", "release/freeze", "trust/policy", "trust/proven"}, leaves...),
	// serve drives the reconciler and promote; nothing imports it but cmd.
	"serve/signin":  append([]string{}, leaves...),
	"serve/actions": append([]string{"release", "release/clusters", "release/freeze", "release/store", "serve/signin", "reconciler/object", "reconciler/verdict", "trust/proven"}, leaves...),
	"serve":         append([]string{"reconciler", "reconciler/...", "promote", "promote/pr", "promote/ciinput", "pins", "registry", "gitforge", "render", "dashboard", "release", "release/...", "trust", "trust/...", "serve/shard", "serve/installed", "serve/notify", "serve/proofs", "serve/signin", "serve/actions", "serve/chains", "serve/admission", "serve/attester", "internal/kubemetrics", "internal/crontab"}, leaves...),
	// The shards' Leases: Kubernetes' leader election, and nothing of pinbot.
	"serve/shard": {},
	// The release runner's parts that stand on their own: its schedule,
	// the pull-request judge, the merge queue, the gate's word read back.
	"serve/chains":    append([]string{"promote", "promote/pr", "release", "gitforge", "pins", "registry", "render", "release/...", "trust", "trust/...", "serve/notify"}, append(proofWords, leaves...)...),
	"serve/admission": append([]string{"serve/chains", "serve/notify", "promote", "promote/pr", "release", "gitforge", "pins", "registry", "render", "release/...", "trust", "trust/..."}, append(proofWords, leaves...)...),
	"serve/attester":  append([]string{"serve/chains", "serve/notify", "promote", "promote/pr", "release", "gitforge", "pins", "registry", "render", "release/...", "trust", "trust/..."}, append(proofWords, leaves...)...),
	// serve as a namespace installs it: client-go, and nothing of pinbot.
	"serve/installed": {},
	// Notifications: HTTP out, with the leaves' bounds and redaction.
	"serve/notify": leaves,
	// The Proof objects: the proof of each app, read from its status.
	"serve/proofs":            above(core, "reconciler/config", "reconciler/status", "reconciler/verdict", "reconciler/...", "internal/logctx"),
	"deploy":                  {},
	"cmd/...":                 {"*"},
	"hack/...":                {"*"},
	"":                        {"*"}, // the module root: this test
	"internal/testenv/...":    {"*"},
	"e2e":                     {}, // tests only: they import what they prove
	"reconciler/internal/...": {"reconciler/object", "reconciler/verdict", "internal/imageref", "internal/clip"},
	"reconciler/spoke":        {"internal/redact"},
	"reconciler/report":       append([]string{"gitforge", "reconciler/verdict", "reconciler/object"}, leaves...),
	// The I/O shells the reconciler reads through: each cluster's clients
	// and watch caches, the fetched branches, the registry's answers.
	"reconciler/cluster": append([]string{"reconciler/object", "reconciler/ssa", "reconciler/verdict", "reconciler/deployer", "reconciler/spoke", "reconciler/cluster/compact"}, leaves...),
	// Reading an app's cluster through Argo CD's API server.
	"reconciler/cluster/argoapi": append([]string{"reconciler/cluster", "reconciler/cluster/compact", "reconciler/object", "reconciler/ssa", "reconciler/deployer", "reconciler/spoke", "reconciler/verdict", "internal/capool", "internal/tokenfile"}, leaves...),
	// What the watch caches keep of an object: client-go's types alone.
	"reconciler/cluster/compact": {"reconciler/verdict", "reconciler/object", "internal/imageref", "internal/clip"},
	// The Events of the proofs: client-go's broadcaster.
	"reconciler/events":    append([]string{"reconciler/verdict", "reconciler/object"}, leaves...),
	"reconciler/gitsource": append([]string{"gitforge"}, leaves...),
	"reconciler/lookup":    append([]string{"reconciler/object", "reconciler/verdict", "registry", "trust", "trust/policy", "trust/proven"}, leaves...),
	"reconciler/discover":  above(core, "reconciler/config", "reconciler/cluster/compact"),
	// What a Flux object reads from the cluster besides Git (valuesFrom,
	// substituteFrom).
	"reconciler/fluxinputs": append([]string{"reconciler/deployer", "reconciler/object", "reconciler/verdict"}, leaves...),
	"reconciler/deployed":   append(above(core, "gitforge", "registry", "reconciler/chartrepo", "reconciler/config", "reconciler/gitsource"), leaves...),
	// Charts of Helm repositories: plain HTTP, and OCI through the registry.
	"reconciler/chartrepo":               append([]string{"registry"}, leaves...),
	"reconciler/chartrepo/chartrepotest": {},
	"pins/pinstest":                      {},
}

// forbidden are libraries a package (key as in allowed) must not depend
// on at all: the pure core speaks no protocol, and pins reads files only.
var forbidden = map[string][]string{
	"pins":   {"net/http", "github.com/go-git/", "code.gitea.io/", "k8s.io/", "sigs.k8s.io/", "helm.sh/"},
	"render": {"github.com/go-git/", "code.gitea.io/"},
	"deploy": {"k8s.io/"},
	"trust":  {"github.com/go-git/", "code.gitea.io/", "k8s.io/client-go", "k8s.io/api", "k8s.io/apimachinery", "sigs.k8s.io/", "helm.sh/"},
}

// clients are the I/O libraries no pure package may reach.
var clients = []string{"k8s.io/client-go/rest", "k8s.io/client-go/dynamic", "k8s.io/client-go/kubernetes", "k8s.io/client-go/informers",
	"github.com/go-git/", "code.gitea.io/", "github.com/google/go-containerregistry/pkg/v1/remote", "helm.sh/"}

// forbiddenDirect maps a package to imports it must not make itself,
// though it may reach them through an allowed package: promote talks to
// no cluster, yet renders charts through render, which pulls Kubernetes
// types in; and it speaks no Git protocol itself, but works through
// gitforge, which holds go-git.
var forbiddenDirect = map[string][]string{
	"promote": {"k8s.io/", "sigs.k8s.io/", "helm.sh/", "github.com/go-git/"},
}

// stdlibOnly are packages that may import nothing but the standard library
// (and themselves), so that every other package can share them.
var stdlibOnly = []string{"internal/imageref", "internal/loopback", "internal/jsonkeys", "internal/capool", "internal/commitid", "internal/coalesce"}

// testSupport are packages only tests, the demo, the benchmarks and the
// build tooling may use. The product must not import "testing" itself
// either; that one is checked on direct imports only, because the Helm
// SDK's chart/common imports it (for testing.Testing()).
var testSupport = []string{"internal/testenv", "hack", "reconciler/internal/fixture", "pins/pinstest", "trust/trusttest", "reconciler/chartrepo/chartrepotest"}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func listDeps(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json=ImportPath,Imports,Deps", "./...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %s", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decoding go list output: %s", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func TestLayering(t *testing.T) {
	for _, p := range listDeps(t) {
		rel := below(p.ImportPath)
		allow, ok := allowList(rel)
		if !ok {
			t.Errorf("%s has no allow-list in layering_test.go: say which module packages it may use", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			if imp == "testing" && isProduct(rel) {
				t.Errorf("%s imports testing", p.ImportPath)
			}
			for _, bad := range forbiddenDirect[rel] {
				if strings.HasPrefix(imp, bad) {
					t.Errorf("%s imports %s; %s must not import %s itself", p.ImportPath, imp, rel, bad)
				}
			}
		}
		for _, dep := range p.Deps {
			if strings.HasPrefix(dep, module+"/") {
				d := below(dep)
				if !matches(allow, d) {
					t.Errorf("%s depends on %s, which its allow-list does not name", p.ImportPath, dep)
				}
				if isProduct(rel) && matchesAny(testSupport, d) {
					t.Errorf("%s imports test support %s", p.ImportPath, dep)
				}
				continue
			}
			for key, bads := range forbidden {
				if within(rel, key) && hasPrefix(dep, bads) {
					t.Errorf("%s depends on %s; %s must not", p.ImportPath, dep, key)
				}
			}
			if slices.Contains(pure, rel) && hasPrefix(dep, clients) {
				t.Errorf("%s depends on %s; a decision package talks to no peer", p.ImportPath, dep)
			}
			if slices.Contains(stdlibOnly, rel) && !isStdlib(dep) {
				t.Errorf("%s imports %s; it may use only the standard library", p.ImportPath, dep)
			}
		}
	}
}

// allowList is rel's allow-list: its own key, else the nearest "x/..."
// key it lies under.
func allowList(rel string) ([]string, bool) {
	if a, ok := allowed[rel]; ok {
		return a, true
	}
	for p := rel; p != "" && p != "."; {
		i := strings.LastIndex(p, "/")
		if i < 0 {
			break
		}
		p = p[:i]
		if a, ok := allowed[p+"/..."]; ok {
			return a, true
		}
	}
	return nil, false
}

// matches reports whether dep is named by allow: "*", the package
// itself, or "x/..." covering it.
func matches(allow []string, dep string) bool {
	for _, a := range allow {
		if a == "*" || a == dep {
			return true
		}
		if base, ok := strings.CutSuffix(a, "/..."); ok && within(dep, base) {
			return true
		}
	}
	return false
}

func matchesAny(keys []string, rel string) bool {
	for _, k := range keys {
		if within(rel, k) {
			return true
		}
	}
	return false
}

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// below is an import path of the module relative to it ("" for the root).
func below(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
}

// isStdlib reports whether an import path belongs to the standard library,
// whose first element, unlike a module path's, holds no dot.
func isStdlib(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// within reports whether the package at rel (a path below the module) is
// key or one of its subpackages.
func within(rel, key string) bool {
	return rel == key || strings.HasPrefix(rel, key+"/")
}

// isProduct reports whether a package ships in the pinbot binary.
func isProduct(rel string) bool {
	return rel != "" && !matchesAny(testSupport, rel)
}
