// Module flux builds the real Flux source-controller and
// kustomize-controller, as test peers that deploy what pinbot proves. It
// is separate from pinbot's own go.mod so the product's dependency graph
// stays lean. `go mod tidy` fails on the controllers' test dependencies:
// the Makefile builds with GOFLAGS=-mod=mod.
module pinbot.dev/pinbot/hack/tools/flux

go 1.26.0

require (
	github.com/fluxcd/kustomize-controller v1.9.6
	github.com/fluxcd/source-controller v1.9.6
)

// The controllers' own replaces, which a module that builds them must
// repeat, and one more.
replace (
	// The module proxy refuses v0.18.3, which the controllers require;
	// v0.18.0 has every symbol source-controller uses.
	github.com/fluxcd/pkg/artifact => github.com/fluxcd/pkg/artifact v0.18.0
	github.com/opencontainers/go-digest => github.com/opencontainers/go-digest v1.0.1-0.20220411205349-bde1400a84be
	gopkg.in/yaml.v3 => gopkg.in/yaml.v3 v3.0.1
	sigs.k8s.io/kustomize/api => sigs.k8s.io/kustomize/api v0.21.1
	sigs.k8s.io/kustomize/kyaml => sigs.k8s.io/kustomize/kyaml v0.21.1
)
