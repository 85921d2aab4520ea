# calico-host build, test and packaging.
export GOFLAGS ?= -mod=mod
GO       ?= go
BIN      := bin
# Version: from the newest v* tag when there is one (v1.2.3-4-gabc -> 1.2.3+4.gabc), else
# 0.1.0+git<commits>.<sha>.
VERSION  ?= $(shell scripts/version.sh)
LDFLAGS  := -s -w -X github.com/calico-host/calico-host/internal/buildinfo.Version=$(VERSION)
BINARIES := $(notdir $(wildcard cmd/*))

.PHONY: all deps build test test-unit test-packages lint demo packages clean scale

all: build

build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ $(addprefix ./cmd/,$(BINARIES))

deps:
	scripts/install-deps.sh

# The full test suite: unit, real etcd, real kernel (in network namespaces, as root), BIRD.
test: deps build
	$(GO) test -count=1 -p 2 -timeout 40m ./...

test-unit:
	$(GO) test -short -count=1 ./...

lint:
	@out=$$(gofmt -l cmd pkg test scripts 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

# The whole system on this machine: embedded etcd, three hosts in network namespaces.
demo:
	scripts/demo.sh

# Fleet scale measurements (test/fleet, as root, Debian etcd-server): N agents (felix syncer +
# calc, confd syncer) on a 3-member etcd cluster through one grpc-proxy per 100 hosts.
# make scale N=1000 [ARGS="-start-rate 50 -churn-for 60s -proxies 0 -calc 20 -log /tmp/fleet.log"]
N ?= 100
scale:
	$(GO) run ./test/fleet/cmd/fleet -hosts $(N) $(ARGS)

packages: build
	rm -rf dist
	$(GO) run ./packaging/build -config nfpm.yaml -out dist -version $(VERSION)

# Packaging test: a booted Debian 12 (systemd-nspawn) installs and runs the .deb files.
test-packages: deps packages
	scripts/test-packages.sh

clean:
	rm -rf $(BIN) dist
