# pinbot's build, test, benchmark and demo entry points.
#
# The real peers the tests run against (Gitea with its container registry,
# etcd, kube-apiserver, kube-controller-manager) are built from source into
# bin/ by separate tools modules under hack/tools, so pinbot's own go.mod
# stays lean. The first build takes minutes; later ones are cached.

GO          ?= go
BIN         := $(CURDIR)/bin
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X pinbot.dev/pinbot/cmd/pinbot/cli.version=$(VERSION)

GITEA_VERSION := 1.26.0
KUBE_VERSION  := v1.37.2
KUBE_LDFLAGS  := -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
                 -X k8s.io/component-base/version.gitMajor=1 \
                 -X k8s.io/component-base/version.gitMinor=37 \
                 -X k8s.io/component-base/version.gitTreeState=clean \
                 -X k8s.io/component-base/version.buildDate=2026-01-01T00:00:00Z

export PINBOT_BIN_DIR := $(BIN)

.PHONY: all build test unit lint bench demo tools gitea kube clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/pinbot ./cmd/pinbot

## tools: the real peers the end-to-end tests start on loopback.
tools: gitea kube

gitea: $(BIN)/gitea
$(BIN)/gitea: hack/tools/gitea/go.mod hack/tools/gitea/go.sum
	@echo ">> building Gitea $(GITEA_VERSION) into bin/ (about 4 minutes the first time)"
	cd hack/tools/gitea && ../../with-progress.sh gitea $(GO) build -tags 'sqlite sqlite_unlock_notify' \
		-ldflags '-X main.Version=$(GITEA_VERSION)' -o $(BIN)/gitea code.gitea.io/gitea
	cd hack/tools/gitea && $(GO) list -m -f '{{.Dir}}' code.gitea.io/gitea > $(BIN)/gitea.root

kube: $(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/etcd
$(BIN)/kube-apiserver: hack/tools/kube/go.mod hack/tools/kube/go.sum
	@echo ">> building kube-apiserver $(KUBE_VERSION) into bin/ (several minutes the first time)"
	cd hack/tools/kube && ../../with-progress.sh kube-apiserver $(GO) build -ldflags '$(KUBE_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-apiserver
$(BIN)/kube-controller-manager: hack/tools/kube/go.mod hack/tools/kube/go.sum
	@echo ">> building kube-controller-manager $(KUBE_VERSION) into bin/"
	cd hack/tools/kube && ../../with-progress.sh kube-controller-manager $(GO) build -ldflags '$(KUBE_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-controller-manager
$(BIN)/etcd: hack/tools/kube/go.mod hack/tools/kube/go.sum
	@echo ">> building etcd into bin/"
	cd hack/tools/kube && ../../with-progress.sh etcd $(GO) build -o $@ go.etcd.io/etcd/server/v3

## test: every test, including those on a real Gitea and a real control plane.
test: tools
	$(GO) test -count=1 ./...

## unit: the tests that need no peer binaries.
unit:
	$(GO) test -short -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

bench: tools build
	$(GO) run ./hack/bench

demo: tools build
	$(GO) run ./hack/demo

clean:
	rm -rf $(BIN)
