# nodewright: the two set-up commands of a fresh machine are `make demo` and
# `make test`. Everything else here serves them.

SHELL := /usr/bin/env bash
GO ?= go
TEST_TIMEOUT ?= 80m

.PHONY: all build test verify generate binaries demo bench bench-scale bench-scale-large soak chaos image clean

all: build

build:
	$(GO) build ./...
	$(GO) build -o bin/nodewright ./cmd/nodewright

# The Kubernetes binaries (etcd, kube-apiserver, ...) that tests run, built once
# from the Go module proxy and cached outside the work tree.
binaries:
	@bash hack/kube-binaries.sh

# The packages whose controllers run concurrently (reconcilers, the operator,
# the kwok provider they drive, the learned store they share): their tests run
# under the race detector (cgo with the machine's gcc), and only there, so that
# no test runs twice.
RACE_PKGS := ./internal/controller/... ./internal/operator/... ./internal/learned/... ./internal/cloudprovider/kwok/...

# The whole test suite: static checks, then every package's tests against real
# kube-apiservers (binaries built first if missing), RACE_PKGS with -race. The
# AWS end-to-end test runs last, alone: two full control planes at once on two
# cores slow both, and the kwok end-to-end tests judge timing-sensitive
# invariants.
test: verify
	@bash hack/chromium.sh >/dev/null
	@dir=$$(bash hack/kube-binaries.sh) && race=$$($(GO) list $(RACE_PKGS)) && \
	  NODEWRIGHT_KUBE_BINARIES=$$dir $(GO) test -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v '/test/e2eaws$$' | grep -vxF "$$race") && \
	  NODEWRIGHT_KUBE_BINARIES=$$dir $(GO) test -race -timeout $(TEST_TIMEOUT) $$race && \
	  NODEWRIGHT_KUBE_BINARIES=$$dir $(GO) test -timeout 30m ./test/e2eaws

# go build as well as go vet: vet type-checks a package with its tests, so a
# non-test file that uses a test-only helper passes vet and breaks the build.
verify:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) build ./...
	$(GO) vet ./...

# Regenerates deepcopy functions and CRDs from the types under api/, and the
# built-in AWS instance catalog from moto's EC2 data and the price table.
generate:
	$(GO) run ./hack/crdgen
	$(GO) generate ./internal/cloudprovider/aws/catalog

# A local cluster (kwok nodes, real control plane), the controller, a NodePool
# and a Deployment that scales up then down; everything is removed at the end.
demo:
	@dir=$$(bash hack/kube-binaries.sh) && \
	  $(GO) build -o bin/nodewright ./cmd/nodewright && \
	  NODEWRIGHT_KUBE_BINARIES=$$dir ./bin/nodewright dev demo

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...

# The 40,000-pending-pod run on a local cluster (issue 4's scale target),
# with a NodePool of every instance size, and with one of 32 vCPUs or more.
bench-scale:
	@dir=$$(bash hack/kube-binaries.sh) && \
	  NODEWRIGHT_KUBE_BINARIES=$$dir $(GO) test -run '^$$' -bench Scale40k -benchtime 1x -timeout 60m ./test/scale/

bench-scale-large:
	@dir=$$(bash hack/kube-binaries.sh) && \
	  NODEWRIGHT_KUBE_BINARIES=$$dir NODEWRIGHT_SCALE_MIN_NODE_CPU=32 \
	  $(GO) test -run '^$$' -bench Scale40k -benchtime 1x -timeout 60m ./test/scale/

# The disruption soak test with 2,000 random events instead of the default
# run's 150 (SOAK_EVENTS=N for another length).
SOAK_EVENTS ?= 2000
soak:
	@dir=$$(bash hack/kube-binaries.sh) && \
	  NODEWRIGHT_KUBE_BINARIES=$$dir NODEWRIGHT_SOAK_EVENTS=$(SOAK_EVENTS) $(GO) test -count=1 -run 'TestSoakRandomEvents' -timeout 150m -v ./test/e2e/

# Leader failover under chaos: two controller replicas, the leader SIGKILLed
# 100 times at random moments during scale-ups and drift rollouts (`make
# test` makes 6); 0 duplicate NodeClaims, 0 disruptions started twice and 0
# leaked nodes are required. NODEWRIGHT_CHAOS_SEED=... repeats a run.
chaos:
	@dir=$$(bash hack/kube-binaries.sh) && \
	  NODEWRIGHT_KUBE_BINARIES=$$dir NODEWRIGHT_CHAOS_KILLS=$${NODEWRIGHT_CHAOS_KILLS:-100} $(GO) test -count=1 -run 'TestChaos$$' -timeout 180m -v ./test/e2e/

# The controller's container image as a tarball (no container runtime
# needed): load it with `docker load -i bin/nodewright-image.tar`.
image:
	$(GO) run ./hack/image -o bin/nodewright-image.tar

clean:
	$(GO) clean -testcache
