# pinbot's build, test, benchmark and demo entry points.
#
# The real peers the tests run against (Gitea with its container registry,
# etcd, kube-apiserver, kube-controller-manager) are built from source into
# bin/ by separate tools modules under hack/tools, so pinbot's own go.mod
# stays lean. The first build takes minutes; later ones are cached.

GO          ?= go
BIN         := $(CURDIR)/bin
# The version has one source, the file VERSION: the release this source is
# or is becoming. The CHANGELOG says which: its heading "## VERSION (DATE)"
# makes a clean tree that release; "## VERSION (unreleased)" makes every
# build say it is not, and which commit it is (v0.5.0-dev+3f2a1c9, .dirty
# for uncommitted changes). Tags do not travel with this repository, so
# neither rule asks git for one. TestOneVersion keeps the chart,
# deploy/base, the docs and the CHANGELOG on it.
ifeq ($(origin VERSION),undefined)
VERSION     := $(shell v=$$(cat VERSION); if grep -qx "\#\# $$v ([0-9-]*)" CHANGELOG.md && git diff --quiet HEAD 2>/dev/null; then echo $$v; \
	else echo $$v-dev+$$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$$(git diff --quiet HEAD 2>/dev/null || echo .dirty); fi)
endif
COMMIT      ?= $(shell git rev-parse HEAD 2>/dev/null)
# The commit's date, not the clock's: the same commit builds the same binary.
BUILD_DATE  ?= $(shell git log -1 --format=%cI 2>/dev/null)
LDFLAGS      = -X pinbot.dev/pinbot/internal/buildinfo.Version=$(VERSION) \
	-X pinbot.dev/pinbot/internal/buildinfo.Commit=$(COMMIT) \
	-X pinbot.dev/pinbot/internal/buildinfo.BuildDate=$(BUILD_DATE)

GITEA_VERSION := 1.26.0
KUBE_VERSION  := v1.37.2
KUBE_LDFLAGS  := -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
                 -X k8s.io/component-base/version.gitMajor=1 \
                 -X k8s.io/component-base/version.gitMinor=37 \
                 -X k8s.io/component-base/version.gitTreeState=clean \
                 -X k8s.io/component-base/version.buildDate=2026-01-01T00:00:00Z

# The deployers whose real CRDs the tests install (make crds).
ARGOCD_VERSION               := v3.6.2
# Flux's CRDs are those of the controllers `make flux` builds
# (hack/tools/flux/go.mod): the newest that build on this Go.
KUSTOMIZE_CONTROLLER_VERSION := v1.9.6
HELM_CONTROLLER_VERSION      := v1.4.0
SOURCE_CONTROLLER_VERSION    := v1.9.6
PROMETHEUS_OPERATOR_VERSION  := v0.88.0

export PINBOT_BIN_DIR := $(BIN)

RELEASE_DIR ?= dist/$(VERSION)

.PHONY: all build demo-bin image release test test-deps unit lint bench bench-scale bench-record demo tools gitea kube kubelet flux argocd renderers cosign kyverno policy-tester oidc crds clean schemas docs

all: build

build:
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/pinbot ./cmd/pinbot

## image: pinbot's own image, without Docker (hack/image): a static pinbot
## for linux/amd64 and linux/arm64 on an empty base, pushed as one OCI index
## to IMAGE (registry/repo:tag) with the docker config's credentials; prints
## registry/repo@sha256:... and then pins deploy/base/kustomization.yaml to it with
## the freshly built bin/pinbot's `pins set`. SOURCE_DATE_EPOCH defaults to
## the commit's time, so one commit always gives one digest. PIN_REPO names
## the repository deploy/base pins when it differs from IMAGE's (say, the
## registry's name inside the cluster); SOURCE, the source label, defaults to
## the git remote origin.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
SOURCE            ?= $(shell git remote get-url origin 2>/dev/null)
PIN_REPO          ?=

image:
	@test -n "$(IMAGE)" || { echo "usage: make image IMAGE=registry/repo:tag" >&2; exit 2; }
	@$(MAKE) --no-print-directory build >&2
	@SOURCE_DATE_EPOCH='$(SOURCE_DATE_EPOCH)' $(GO) run ./hack/image --image '$(IMAGE)' --go '$(GO)' \
		--version '$(VERSION)' --ldflags '$(LDFLAGS)' --source '$(SOURCE)' \
		--pin-with $(BIN)/pinbot --pin-dir deploy/base $(if $(PIN_REPO),--pin-repo '$(PIN_REPO)')

## release: a release into dist/VERSION (hack/release): per-platform
## archives (binary, LICENSE, README, completions) for linux and darwin on
## amd64 and arm64, a CycloneDX SBOM of each, the Helm chart, checksums.txt
## and provenance.intoto.json. With REGISTRY=host/org it also pushes the
## images host/org/pinbot:VERSION and :VERSION-debug (with a shell built
## from hack/debugshell) and the chart oci://host/org/charts/pinbot, with
## the docker config's credentials; with SIGNING_KEY=cosign.key (its
## password in COSIGN_PASSWORD) it signs the checksums, the images and
## the chart as cosign does. The version is the file VERSION's; a
## VERSION=… that differs is refused. The registry is asked over TLS
## before anything is built; CA_FILE=ca.pem trusts a private CA, and a
## certificate that does not verify is refused, never spoken to in plain
## HTTP. A failed run leaves dist/VERSION empty. PLATFORMS=linux/amd64,…
## narrows the archives' platforms.
##   make release REGISTRY=gitea.example/platform SIGNING_KEY=cosign.key [CA_FILE=ca.pem]
release: VERSION = $(shell cat VERSION)
release:
	@SOURCE_DATE_EPOCH='$(SOURCE_DATE_EPOCH)' $(GO) run ./hack/release --version '$(VERSION)' --out '$(RELEASE_DIR)' \
		--go '$(GO)' --ldflags '$(LDFLAGS)' --source '$(SOURCE)' $(if $(REGISTRY),--registry '$(REGISTRY)') \
		$(if $(SIGNING_KEY),--key '$(SIGNING_KEY)') $(if $(CA_FILE),--ca-file '$(CA_FILE)') $(if $(PLATFORMS),--platforms '$(PLATFORMS)')

## tools: the real peers the end-to-end tests start on loopback. Gitea,
## the control plane, Flux, Argo CD and the renderers Argo CD runs build
## two at a time: they share few packages (each module pins its own
## Kubernetes libraries; Argo CD builds with another Go), and each build
## leaves a core idle while it downloads modules and links.
tools:
	@$(MAKE) --no-print-directory -j2 gitea kube crds flux argocd renderers cosign kyverno policy-tester oidc

gitea: $(BIN)/gitea
$(BIN)/gitea: hack/tools/gitea/go.mod hack/tools/gitea/go.sum
	@echo ">> building Gitea $(GITEA_VERSION) into bin/ (about 5 minutes the first time)"
	cd hack/tools/gitea && ../../with-progress.sh gitea $(GO) build -tags 'sqlite sqlite_unlock_notify' \
		-ldflags '-X main.Version=$(GITEA_VERSION)' -o $(BIN)/gitea code.gitea.io/gitea
	cd hack/tools/gitea && $(GO) list -m -f '{{.Dir}}' code.gitea.io/gitea > $(BIN)/gitea.root

# The control plane is one go build of three main packages: they share most
# of their packages (etcd's client and server, grpc, client-go, apiserver),
# and one build graph compiles each once and keeps both cores busy until the
# last link. go build names etcd's binary "server" (the last path element
# before /v3); each binary is moved into bin/ whole, so nothing ever sees a
# half-written one. The hollow kubelet (the real kubelet with a fake
# runtime and pinbot's image service, hack/tools/kube/hollow-kubelet) is
# in the same build: it shares nearly all of its packages with the others.
# So does kubectl (half a minute more), which the tests of the docs' command
# blocks run as a reader pastes them.
KUBE_BINS := $(BIN)/etcd $(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/hollow-kubelet $(BIN)/kubectl
KUBE_PKGS := go.etcd.io/etcd/server/v3 k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager ./hollow-kubelet k8s.io/kubernetes/cmd/kubectl

kube kubelet: $(KUBE_BINS)
$(KUBE_BINS) &: hack/tools/kube/go.mod hack/tools/kube/go.sum $(wildcard hack/tools/kube/hollow-kubelet/*.go)
	@echo ">> building etcd, kube-apiserver, kube-controller-manager, the hollow kubelet and kubectl $(KUBE_VERSION) into bin/ (one go build; about 15 minutes the first time)"
	@rm -rf $(BIN)/.kube && mkdir -p $(BIN)/.kube
	cd hack/tools/kube && ../../with-progress.sh kube $(GO) build -ldflags '$(KUBE_LDFLAGS)' -o $(BIN)/.kube/ $(KUBE_PKGS)
	mv $(BIN)/.kube/server $(BIN)/etcd
	mv $(BIN)/.kube/kube-apiserver $(BIN)/.kube/kube-controller-manager $(BIN)/.kube/hollow-kubelet $(BIN)/.kube/kubectl $(BIN)/
	@rmdir $(BIN)/.kube

## flux: the real Flux source-controller and kustomize-controller (the
## deployers the e2e tests run, which apply what pinbot proves), one go
## build into bin/ like the control plane's.
FLUX_BINS := $(BIN)/source-controller $(BIN)/kustomize-controller

flux: $(FLUX_BINS)
$(FLUX_BINS) &: hack/tools/flux/go.mod hack/tools/flux/go.sum
	@echo ">> building Flux's source-controller and kustomize-controller into bin/ (about 15 minutes the first time)"
	@rm -rf $(BIN)/.flux && mkdir -p $(BIN)/.flux
	cd hack/tools/flux && GOFLAGS=-mod=mod ../../with-progress.sh flux $(GO) build -o $(BIN)/.flux/ \
		github.com/fluxcd/source-controller github.com/fluxcd/kustomize-controller
	mv $(BIN)/.flux/source-controller $(BIN)/.flux/kustomize-controller $(BIN)/
	@rmdir $(BIN)/.flux

## argocd: the real Argo CD (application-controller and repo-server are
## one multi-call binary) into bin/, and into bin/argocd-path the
## commands the repo-server runs besides git (its image has them on PATH),
## built by Go 1.27, which Argo CD 3.6
## needs: GOTOOLCHAIN is set for this build alone, and the go command
## fetches that toolchain as a module the first time.
ARGOCD_TOOLCHAIN := go1.27.3

argocd: $(BIN)/argocd
$(BIN)/argocd: hack/tools/argocd/go.mod hack/tools/argocd/go.sum
	@echo ">> building Argo CD $(ARGOCD_VERSION) into bin/ with $(ARGOCD_TOOLCHAIN) (about 10 minutes the first time)"
	@rm -rf $(BIN)/.argocd && mkdir -p $(BIN)/.argocd
	cd hack/tools/argocd && GOTOOLCHAIN=$(ARGOCD_TOOLCHAIN) ../../with-progress.sh argocd $(GO) build -o $(BIN)/.argocd/argocd \
		github.com/argoproj/argo-cd/v3/cmd
	cd hack/tools/argocd && install -m 0755 "$$(GOTOOLCHAIN=$(ARGOCD_TOOLCHAIN) $(GO) list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)/hack/git-verify-wrapper.sh" $(BIN)/.argocd/
	mkdir -p $(BIN)/argocd-path && mv $(BIN)/.argocd/git-verify-wrapper.sh $(BIN)/argocd-path/
	mv $(BIN)/.argocd/argocd $(BIN)/argocd
	@rmdir $(BIN)/.argocd

## renderers: Helm and kustomize into bin/argocd-path, for Argo CD's
## repo-server to render Helm and kustomize apps with, as its image does.
RENDERERS := $(BIN)/argocd-path/helm $(BIN)/argocd-path/kustomize

renderers: $(RENDERERS)
$(RENDERERS) &: hack/tools/renderers/go.mod hack/tools/renderers/go.sum
	@echo ">> building Helm and kustomize into bin/argocd-path (about 4 minutes the first time)"
	@rm -rf $(BIN)/.renderers && mkdir -p $(BIN)/.renderers $(BIN)/argocd-path
	cd hack/tools/renderers && ../../with-progress.sh renderers $(GO) build -o $(BIN)/.renderers/ \
		helm.sh/helm/v4/cmd/helm sigs.k8s.io/kustomize/kustomize/v5
	mv $(BIN)/.renderers/helm $(BIN)/.renderers/kustomize $(BIN)/argocd-path/
	@rmdir $(BIN)/.renderers

## cosign: Sigstore's cosign CLI into bin/, which the release test runs to
## verify what make release signed, as a user would.
cosign: $(BIN)/cosign
$(BIN)/cosign: hack/tools/cosign/go.mod hack/tools/cosign/go.sum
	@echo ">> building cosign into bin/ (about 5 minutes the first time)"
	@rm -rf $(BIN)/.cosign && mkdir -p $(BIN)/.cosign
	cd hack/tools/cosign && ../../with-progress.sh cosign $(GO) build -o $(BIN)/.cosign/cosign github.com/sigstore/cosign/v3/cmd/cosign
	mv $(BIN)/.cosign/cosign $(BIN)/cosign
	@rmdir $(BIN)/.cosign

## kyverno, policy-tester: the verifiers platform teams already run,
## which the attestation test runs against the policies
## docs/attestations.md shows: the Kyverno CLI (kyverno apply) and
## Sigstore policy-controller's policy-tester. Each module keeps its
## project's replaces.
kyverno: $(BIN)/kyverno
$(BIN)/kyverno: hack/tools/kyverno/go.mod hack/tools/kyverno/go.sum
	@echo ">> building the Kyverno CLI into bin/ (about 8 minutes the first time)"
	@rm -rf $(BIN)/.kyverno && mkdir -p $(BIN)/.kyverno
	cd hack/tools/kyverno && ../../with-progress.sh kyverno $(GO) build -o $(BIN)/.kyverno/kyverno github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno
	mv $(BIN)/.kyverno/kyverno $(BIN)/kyverno
	@rmdir $(BIN)/.kyverno

policy-tester: $(BIN)/policy-tester
$(BIN)/policy-tester: hack/tools/policytester/go.mod hack/tools/policytester/go.sum
	@echo ">> building policy-controller's policy-tester into bin/ (about 5 minutes the first time)"
	@rm -rf $(BIN)/.policy-tester && mkdir -p $(BIN)/.policy-tester
	cd hack/tools/policytester && ../../with-progress.sh policy-tester $(GO) build -o $(BIN)/.policy-tester/policy-tester github.com/sigstore/policy-controller/cmd/tester
	mv $(BIN)/.policy-tester/policy-tester $(BIN)/policy-tester
	@rmdir $(BIN)/.policy-tester

## oidc: zitadel/oidc's example OpenID Provider, the sign-in peer the
## dashboard's tests log in against (users from a file, loopback only).
oidc: $(BIN)/oidc
$(BIN)/oidc: hack/tools/oidc/go.mod hack/tools/oidc/go.sum
	@echo ">> building an OpenID Provider into bin/ (under a minute the first time)"
	@rm -rf $(BIN)/.oidc && mkdir -p $(BIN)/.oidc
	cd hack/tools/oidc && ../../with-progress.sh oidc $(GO) build -o $(BIN)/.oidc/oidc github.com/zitadel/oidc/v3/example/server
	mv $(BIN)/.oidc/oidc $(BIN)/oidc
	@rmdir $(BIN)/.oidc

## crds: the real CustomResourceDefinitions of Argo CD's Application and ApplicationSet,
## Flux's Kustomization, HelmRelease, GitRepository, HelmRepository and
## OCIRepository, and the Prometheus Operator's
## ServiceMonitor (which pinbot's chart renders), copied out of the modules'
## source (through go mod download, nothing added to go.mod) into
## bin/crds, for the tests to install in the control plane.
CRDS := \
	github.com/argoproj/argo-cd/v3@$(ARGOCD_VERSION)=manifests/crds/application-crd.yaml \
	github.com/argoproj/argo-cd/v3@$(ARGOCD_VERSION)=manifests/crds/appproject-crd.yaml \
	github.com/argoproj/argo-cd/v3@$(ARGOCD_VERSION)=manifests/crds/applicationset-crd.yaml \
	github.com/fluxcd/kustomize-controller@$(KUSTOMIZE_CONTROLLER_VERSION)=config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml \
	github.com/fluxcd/source-controller@$(SOURCE_CONTROLLER_VERSION)=config/crd/bases/source.toolkit.fluxcd.io_gitrepositories.yaml \
	github.com/fluxcd/source-controller@$(SOURCE_CONTROLLER_VERSION)=config/crd/bases/source.toolkit.fluxcd.io_helmrepositories.yaml \
	github.com/fluxcd/source-controller@$(SOURCE_CONTROLLER_VERSION)=config/crd/bases/source.toolkit.fluxcd.io_ocirepositories.yaml \
	github.com/fluxcd/source-controller@$(SOURCE_CONTROLLER_VERSION)=config/crd/bases/source.toolkit.fluxcd.io_buckets.yaml \
	github.com/fluxcd/source-controller@$(SOURCE_CONTROLLER_VERSION)=config/crd/bases/source.toolkit.fluxcd.io_helmcharts.yaml \
	github.com/fluxcd/source-controller@$(SOURCE_CONTROLLER_VERSION)=config/crd/bases/source.toolkit.fluxcd.io_externalartifacts.yaml \
	github.com/fluxcd/helm-controller@$(HELM_CONTROLLER_VERSION)=config/crd/bases/helm.toolkit.fluxcd.io_helmreleases.yaml \
	github.com/prometheus-operator/prometheus-operator@$(PROMETHEUS_OPERATOR_VERSION)=example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml

crds: $(BIN)/crds/VERSIONS
$(BIN)/crds/VERSIONS: Makefile hack/crds/main.go
	@echo ">> copying the Argo CD and Flux CRDs into bin/crds"
	GO=$(GO) $(GO) run ./hack/crds -o $(BIN)/crds $(CRDS)

## test: every test, including those on a real Gitea and a real control plane.
## go test's default 10-minute limit per package binary is too short for
## hack/image on a cold build cache: it cross-compiles pinbot for arm64.
test: tools test-deps
	$(GO) test -count=1 -timeout 30m ./...
	$(GO) test -run '^$$' -fuzz '^FuzzTreeShapes$$' -fuzztime 60s ./pins

## test-deps: the system packages the tests need (chromium, chattr).
test-deps:
	@hack/test-deps.sh

## unit: the tests that need no peer binaries.
unit:
	$(GO) test -short -count=1 ./...

## docs: the CLI reference in docs/cli, from the cobra commands (a test
## checks it is current).
docs:
	$(GO) run ./hack/clidocs docs/cli

## schemas: the JSON Schemas of .pinbot.yaml and the reconciler config,
## and their reference pages, generated from their Go types and doc
## comments into docs/schema (a test checks they are current).
schemas:
	$(GO) run ./hack/schema docs/schema

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

bench: tools build
	$(GO) run ./hack/bench

## bench-scale: the fleet, 10,000 apps over two control planes and four
## replicas, then the release chain with 10,000 apps loaded (about 30
## minutes); bench-record: 50,000 apps over five, run by hand
## (docs/development.md).
bench-scale: tools build
	$(GO) run ./hack/bench -run fleet,release-10k

bench-record: tools build
	$(GO) run ./hack/bench -run fleet-record

## demo: pinbot's whole job on this machine (hack/demo). pinbot and the
## demo are one go build, so their shared packages compile once, and come
## first: the demo's first step needs neither Gitea nor the control plane,
## which build meanwhile in the background at a lower priority (the first
## time only), Gitea ahead of the control plane since the demo needs it
## first, and Argo CD (with the renderers its repo-server runs) after the
## control plane. The demo waits for each build when it needs it (logs:
## bin/gitea-build.log, bin/kube-build.log, which also copies the
## deployers' CRDs, and bin/argocd-build.log).
demo:
	@hack/test-deps.sh redis-server
	@mkdir -p $(BIN) && rm -f $(BIN)/kube-build.status $(BIN)/gitea-build.status $(BIN)/argocd-build.status
	@( nice -n 10 $(MAKE) --no-print-directory gitea > $(BIN)/gitea-build.log 2>&1; echo $$? > $(BIN)/gitea-build.status ) &
	@( nice -n 15 $(MAKE) --no-print-directory crds kube > $(BIN)/kube-build.log 2>&1; echo $$? > $(BIN)/kube-build.status; \
	   nice -n 15 $(MAKE) --no-print-directory argocd renderers > $(BIN)/argocd-build.log 2>&1; echo $$? > $(BIN)/argocd-build.status ) &
	@echo ">> building pinbot and the demo: the first time, Go modules download and compile for about 5 minutes on 2 cores (4.6 measured on an idle 2-core machine; longer while the peers build beside it); then seconds"
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/pinbot ./hack/demo
	PINBOT_GITEA_BUILD=$(BIN)/gitea-build PINBOT_KUBE_BUILD=$(BIN)/kube-build PINBOT_ARGOCD_BUILD=$(BIN)/argocd-build $(BIN)/demo

demo-bin:
	CGO_ENABLED=0 $(GO) build -o $(BIN)/demo ./hack/demo

clean:
	rm -rf $(BIN)
