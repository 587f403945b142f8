# nodewright: the two set-up commands of a fresh machine are `make demo` and
# `make test`. Everything else here serves them.

SHELL := /usr/bin/env bash
GO ?= go
TEST_TIMEOUT ?= 80m

.PHONY: all build test verify generate binaries demo bench clean

all: build

build:
	$(GO) build ./...

# The Kubernetes binaries (etcd, kube-apiserver, ...) that tests run, built once
# from the Go module proxy and cached outside the work tree.
binaries:
	@bash hack/kube-binaries.sh

# The whole test suite: static checks, then every package's tests against real
# kube-apiservers (binaries built first if missing).
test: verify
	@dir=$$(bash hack/kube-binaries.sh) && \
	  NODEWRIGHT_KUBE_BINARIES=$$dir $(GO) test -timeout $(TEST_TIMEOUT) ./...

verify:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Regenerates deepcopy functions and CRDs from the types under api/.
generate:
	$(GO) run ./hack/crdgen

demo:
	@echo "make demo: the local cluster demo needs the controller and the kwok provider (issue 4), which are not built yet."
	@echo "Today you can run the test suite with: make test"
	@exit 1

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	$(GO) clean -testcache
