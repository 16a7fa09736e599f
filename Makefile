# hacp: apiserver, vipd and lbproxy. `make run` starts the apiserver with embedded etcd on
# https://127.0.0.1:6443; `make run-cluster` adds the upstream kube-controller-manager,
# kube-scheduler and kwok with fake nodes; `make test` runs every suite (root needed for the
# namespace ones).

GO          ?= go
VERSION     ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X github.com/hacp/hacp/internal/version.Version=$(VERSION)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.7.0
DATA        ?= _data

.PHONY: all build etcd-tools dist run run-cluster test test-race test-kubectl test-stress lint lint-ansible bench bench-scale drill upstream diff-upstream e2e e2e-rootfs clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/apiserver ./cmd/vipd ./cmd/lbproxy ./cmd/hacpctl

# etcdctl and etcdutl v3.7.3 (the etcd of the apiserver) for the Ansible rollout's health
# checks, member changes, snapshots and restores: built from a pinned scratch module.
etcd-tools:
	cd deploy/ansible/etcd-tools && $(GO) build -o $(CURDIR)/bin/ go.etcd.io/etcd/etcdctl/v3 go.etcd.io/etcd/etcdutl/v3

# Release artifacts in _output/dist (docs/deploy.md#packages): per architecture a tarball and
# the Debian packages hacp-apiserver, hacp-vipd, hacp-lbproxy and hacpctl, cross-compiled with
# CGO off and packaged with nFPM (internal/tools/dist). A program of its list that is missing
# fails it; DIST_FLAGS=-allow-missing skips it instead (a branch without every program).
ARCH       ?= amd64 arm64
DIST_FLAGS ?=
dist:
	$(GO) run ./internal/tools/dist -arch "$(ARCH)" $(DIST_FLAGS)

run: build
	bin/apiserver --config configs/apiserver.yaml --data-dir $(DATA)

# `make run` plus the upstream kube-controller-manager, kube-scheduler and kwok with 3 fake
# nodes (built into _output/upstream on first use), so a Deployment gets Running pods; all in
# the foreground, Ctrl-C stops them (internal/upstream/cluster; logs in $(DATA)/cluster).
run-cluster: build
	$(GO) build -o _output/run-cluster ./internal/upstream/cluster
	_output/run-cluster --apiserver bin/apiserver --config configs/apiserver.yaml --data-dir $(DATA)

test:
	$(GO) test -count=1 -timeout 30m ./...

# Every suite with the race detector (CI runs it after `make test`).
test-race:
	$(GO) test -race -count=1 -timeout 30m ./...

# The kubectl tests (every test that reaches testenv.Kubectl) once per supported kubectl
# release, 1.35, 1.36 and 1.37 (upstream.KubectlVersions, built into _output/upstream on first
# use), with HACP_KUBECTL set to it; e.g. `make test-kubectl KUBECTL_VERSIONS=v1.36.3`.
# `go run ./test/kubectl -list` lists the tests, `-kubectl PATH` runs them with any kubectl.
KUBECTL_VERSIONS ?=
test-kubectl:
	$(GO) run ./test/kubectl $(if $(KUBECTL_VERSIONS),-versions $(KUBECTL_VERSIONS))

# Flaky-test hunt: PKGS (default all) COUNT times with -race while a CPU burner keeps every
# core busy, e.g. `make test-stress PKGS=./pkg/lb/ COUNT=10 RUN=TestBackendMaxConnQueue`.
PKGS  ?= ./...
COUNT ?= 5
RUN   ?=
test-stress:
	$(GO) run ./test/stress -count $(COUNT) $(if $(RUN),-run '$(RUN)') $(PKGS)

# Build the upstream programs tests run against hacp (kube-apiserver, kube-controller-manager,
# kube-scheduler 1.33, kwok and sample-apiserver; kubectl 1.35, 1.36 and 1.37 for
# test-kubectl; promtool for deploy/monitoring) into
# _output/upstream/, once per version; tests build them on first use otherwise (see
# internal/upstream).
upstream:
	$(GO) run ./internal/upstream/prebuild

# The differential harness (test/upstream/diffupstream, docs/compatibility.md): kube-apiserver
# at UPSTREAM_K8S_VERSION (default: the newest release, upstream.LatestKubernetesVersion) and
# hacp side by side, one corpus to both; report in _output/diff-upstream. It fails on a
# difference test/upstream/diff-allow.yaml does not allow. RECORD=1 also re-records the golden
# files of test/upstream (only from the release the suite's peers are at; hack/golden/gen.sh).
UPSTREAM_K8S_VERSION ?=
RECORD ?=
diff-upstream:
	UPSTREAM_K8S_VERSION=$(UPSTREAM_K8S_VERSION) $(GO) run ./internal/tools/diffupstream $(if $(RECORD),-record)
	$(if $(RECORD),$(GO) test ./test/upstream -run '^TestGoldenManagedFields$$' -count=1 -update-golden)

# gofmt, vet, staticcheck, and no non-generated function over 100 lines (except the tables
# listed in internal/tools/funclen).
lint:
	@out=$$(gofmt -l cmd pkg internal test); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) run ./internal/tools/funclen .

# The playbooks: syntax check and ansible-lint's production profile.
lint-ansible:
	cd deploy/ansible && for p in *.yml; do ansible-playbook -i inventory.example.ini --syntax-check $$p || exit 1; done
	cd deploy/ansible && ansible-lint --profile production

bench: build
	@set -e; for d in test/bench/*/; do echo "== $$d"; $(GO) run ./$$d; done

# The scale bench (issue 39), not part of make test: by default it searches for the largest N
# each server carries (hours on 2 cores); SCALE_FLAGS="-nodes 50 -quick" for a short run.
SCALE_FLAGS ?= -search 100,200,400,1000
bench-scale: build
	flock /tmp/hacp-drill.lock $(GO) run ./test/scale $(SCALE_FLAGS)

drill: build
	$(GO) run ./test/drill

# The Ansible rollout onto three booted systemd-nspawn hosts and the day-2 playbooks
# (test/e2e, root; about 15 minutes): the roles install the amd64 packages of `make dist`.
# E2E_FLAGS=--keep leaves the hosts running.
E2E_FLAGS ?=
e2e: build etcd-tools
	$(MAKE) dist ARCH=amd64
	flock -o /tmp/hacp-netns.lock $(GO) run ./test/e2e $(E2E_FLAGS)

# Only the e2e hosts' Debian rootfs (debootstrap into _output/e2e-rootfs, once; mostly
# download, so .ci/run makes it in the background while the other suites run).
e2e-rootfs:
	flock -o /tmp/hacp-e2e-rootfs.lock $(GO) run ./test/e2e --rootfs-only

clean:
	rm -rf bin _output
