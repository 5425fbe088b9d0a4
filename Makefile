# udnkit — see README.md. Every tool version is pinned here; tools go into ./bin,
# envtest binaries into a per-version cache outside the checkout.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -o pipefail -ec
.DEFAULT_GOAL := help

GO ?= go
LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_TOOLS_VERSION ?= v0.23.0
# The envtest Kubernetes version follows k8s.io/api in go.mod (v0.37.2 -> 1.37.2).
ENVTEST_K8S_VERSION ?= $(shell $(GO) list -m -f '{{.Version}}' k8s.io/api | sed 's/^v0\./1./')
ETCD_VERSION ?= 3.7.0
ENVTEST_STORE ?= $(or $(XDG_DATA_HOME),$(HOME)/.local/share)/kubebuilder-envtest/k8s
ENVTEST_ASSETS ?= $(ENVTEST_STORE)/$(ENVTEST_K8S_VERSION)-linux-$(shell $(GO) env GOARCH)
# Parallel test packages each start an apiserver; 2 cores need more than 20 s.
export KUBEBUILDER_CONTROLPLANE_START_TIMEOUT ?= 90s

CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)

CHART_DIR := charts/udnkit
CRD_DIR := $(CHART_DIR)/files/crds
EXTERNAL_CRD_DIR := $(CHART_DIR)/files/external-crds
IPAMCLAIMS_MODULE := github.com/k8snetworkplumbingwg/ipamclaims
NAD_MODULE := github.com/k8snetworkplumbingwg/network-attachment-definition-client
# Not a Go dependency (the dataplane reads MultiNetworkPolicies unstructured):
# the version OVN-Kubernetes' go.mod requires, for its CRD only.
MNP_MODULE := github.com/k8snetworkplumbingwg/multi-networkpolicy@v1.0.1

# OVN and Open vSwitch: the releases ovnk/ovn.go and dataplane/ovsdbserver/ovn.go name (OVN 26.03.1:
# NB 7.18.0, SB 21.8.0), provisioned from Debian's archive into a cache
# outside the checkout (make ovn). Every recipe finds those tools first on PATH;
# the dataplane models are generated from their schemas.
OVN_VERSION := $(shell sed -n 's/^const OVNVersion = "\(.*\)"$$/\1/p' ovnk/ovn.go)
OVS_VERSION := $(shell sed -n 's/^\tOVSVersion = "\(.*\)"$$/\1/p' dataplane/ovsdbserver/ovn.go)
OVN_PROVISION := OVN_VERSION=$(OVN_VERSION) OVS_VERSION=$(OVS_VERSION) dataplane/ovsdbserver/provision-ovn.sh
OVN_DIR := $(shell $(OVN_PROVISION) --print-dir)
OVN_SCHEMA_DIR := $(OVN_DIR)/rootfs/usr/share/ovn
export PATH := $(OVN_DIR)/bin:$(PATH)

TEST_FLAGS ?= -count=1 -timeout=30m
FUZZTIME ?= 30s
BENCH_FLAGS ?= -run='^$$' -bench=. -benchmem -count=1
# The packet suite's benchmarks (a live migration, a node's upgrade) take
# seconds per sample: a fixed count of samples, after the other packages.
PACKET_BENCH_FLAGS ?= -benchtime=5x
# The first packet: one sample per run, five runs in one process (the
# first is the first network the managers meet, the next four warm ones).
FIRST_PACKET_BENCH_FLAGS ?= -benchtime=1x -count=5

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Generation

.PHONY: generate
generate: $(CONTROLLER_GEN) ovn ## Generate deepcopy code and the OVN NB/SB models (libovsdb modelgen).
	$(CONTROLLER_GEN) object paths=./apis/...
	rm -f dataplane/nbdb/*.go dataplane/sbdb/*.go
	$(GO) tool modelgen -extended -p nbdb -o dataplane/nbdb $(OVN_SCHEMA_DIR)/ovn-nb.ovsschema
	$(GO) tool modelgen -extended -p sbdb -o dataplane/sbdb $(OVN_SCHEMA_DIR)/ovn-sb.ovsschema

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs, RBAC and webhook configurations into the chart; copy the IPAMClaim, NAD and MultiNetworkPolicy CRDs from their modules.
	rm -f $(CRD_DIR)/*.yaml $(CHART_DIR)/files/rbac/*.yaml $(CHART_DIR)/files/rbac-dataplane/*.yaml $(CHART_DIR)/files/webhook/*.yaml
	$(CONTROLLER_GEN) crd paths=./apis/... output:crd:artifacts:config=$(CRD_DIR)
	$(CONTROLLER_GEN) rbac:roleName=udnkit-manager webhook paths=./... \
		output:rbac:artifacts:config=$(CHART_DIR)/files/rbac output:webhook:artifacts:config=$(CHART_DIR)/files/webhook
	# The dataplane DaemonSet's role (dataplane.mode=daemonset): the dataplane's and the manager's own rules only.
	$(CONTROLLER_GEN) rbac:roleName=udnkit-dataplane paths="./dataplane/...;./cmd/udnkit/app/..." \
		output:rbac:artifacts:config=$(CHART_DIR)/files/rbac-dataplane
	mkdir -p $(EXTERNAL_CRD_DIR)
	$(GO) mod download $(IPAMCLAIMS_MODULE) $(NAD_MODULE) $(MNP_MODULE)
	install -m 0644 "$$($(GO) list -m -f '{{.Dir}}' $(IPAMCLAIMS_MODULE))/artifacts/k8s.cni.cncf.io_ipamclaims.yaml" $(EXTERNAL_CRD_DIR)/ipamclaims.k8s.cni.cncf.io.yaml
	install -m 0644 "$$($(GO) list -m -f '{{.Dir}}' $(NAD_MODULE))/artifacts/networks-crd.yaml" $(EXTERNAL_CRD_DIR)/network-attachment-definitions.k8s.cni.cncf.io.yaml
	install -m 0644 "$$($(GO) list -m -f '{{.Dir}}' $(MNP_MODULE))/scheme.yml" $(EXTERNAL_CRD_DIR)/multi-networkpolicies.k8s.cni.cncf.io.yaml

.PHONY: verify
verify: generate manifests ## Regenerate everything and fail if the tree changed; also gofmt and go vet.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) mod tidy -diff
	@if [ -n "$$(git status --porcelain --untracked-files=all)" ]; then \
		echo "make verify: generated files are out of date (run make generate manifests and commit):"; \
		git status --porcelain --untracked-files=all; git --no-pager diff --stat; exit 1; \
	fi
	@echo "verify: clean"

##@ Build and run

.PHONY: build
build: ## Build the binaries into ./bin.
	$(GO) build -o $(LOCALBIN)/ ./cmd/...

CHART_VERSION := $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}/\1/p' $(CHART_DIR)/Chart.yaml)
IMAGE_REPOSITORY := $(shell sed -n 's/^  repository: *//p' $(CHART_DIR)/values.yaml | head -1)
IMAGE ?= $(IMAGE_REPOSITORY):$(CHART_VERSION)

.PHONY: image
image: ## Build the manager image ($(IMAGE), the chart's default) as bin/udnkit-image.tar, without a container engine.
	mkdir -p $(LOCALBIN)
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -ldflags "-s -w" -o $(LOCALBIN)/image/udnkit ./cmd/udnkit
	$(GO) run ./hack/imagebuild -binary $(LOCALBIN)/image/udnkit -ref $(IMAGE) -o $(LOCALBIN)/udnkit-image.tar
	@echo "image $(IMAGE): $(LOCALBIN)/udnkit-image.tar (docker load -i, podman load -i, or crane push)"

.PHONY: run
# ZONES=n: n real nodes (network namespaces with ovs-vswitchd and ovn-controller; root), each its own OVN
# zone with its own NB/SB, northd and dataplane (.udnkit/zone-<node>/), and two pods that ping each other.
ZONES ?= 0
run: envtest ovn build ## Start a local control plane with udnkit installed (ZONES=3: one OVN zone per node); Ctrl-C stops it.
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(LOCALBIN)/udnkit-local --repo-root=$(CURDIR) --zones=$(ZONES)

##@ Test

.PHONY: test
test: envtest ovn ## Run every test: unit, CEL suite (apiserver + offline), envtest suites.
	$(GO) vet ./...
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) test $(TEST_FLAGS) ./...

.PHONY: bench
bench: envtest ovn ## Run every benchmark and print one table (also in bin/bench-report.md).
	mkdir -p $(LOCALBIN)
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) test $(BENCH_FLAGS) $$($(GO) list ./... | grep -v -e '/envtest/datapath$$' -e '/cmd/udnkit-local$$') | tee $(LOCALBIN)/bench-raw.txt
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) flock /tmp/datapath.lock $(GO) test $(BENCH_FLAGS) $(PACKET_BENCH_FLAGS) ./envtest/datapath/ | tee -a $(LOCALBIN)/bench-raw.txt
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) flock /tmp/datapath.lock $(GO) test $(BENCH_FLAGS) $(FIRST_PACKET_BENCH_FLAGS) ./cmd/udnkit-local/ | tee -a $(LOCALBIN)/bench-raw.txt
	$(GO) run ./hack/benchreport -o $(LOCALBIN)/bench-report.md < $(LOCALBIN)/bench-raw.txt
	@if [ -n "$(UPSTREAM_GIT)" ]; then $(MAKE) --no-print-directory timing && cat $(LOCALBIN)/timing-table.md >> $(LOCALBIN)/bench-report.md; \
	else echo "programming time against upstream's ovnkube: not run (make bench UPSTREAM_GIT=<git dir of upstream ovn-kubernetes>, or make timing)"; fi

# make timing: udnkit's time to write and remove whole networks against
# upstream's ovnkube's, both live on this machine from the same API state
# (../shared/upstream-live builds upstream's ovnkube from UPSTREAM_GIT, a
# git directory of upstream ovn-kubernetes). Takes the machine ~15 minutes.
.PHONY: timing
timing: envtest ovn ## udnkit against upstream's ovnkube, live: create/delete times (UPSTREAM_GIT=<git dir>); table in bin/timing-table.md.
	mkdir -p $(LOCALBIN)
	UPSTREAM_GIT=$(UPSTREAM_GIT) KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) test/upstreamlive/timing.sh | tee $(LOCALBIN)/timing-raw.txt
	sed -n '/^| operation /,$$p' $(LOCALBIN)/timing-raw.txt > $(LOCALBIN)/timing-table.md

# make scale: the scale suite (outside make test). Every run has
# SCALE_NODES Nodes; SCALE_FRACTIONS are fractions of SCALE_NETWORKS and
# SCALE_PODS, one run each (each doubles the last). The default sizes finish
# within ~15 minutes on this project's 2-core machine; the full size is
# SCALE_FRACTIONS=1/1.
SCALE_NODES ?= 500
SCALE_NETWORKS ?= 4095
SCALE_PODS ?= 20000
SCALE_FRACTIONS ?= 1/64,1/32,1/16
SCALE_FLAGS ?=

.PHONY: scale
scale: envtest ovn ## Scale suite: nodes, networks, pods on the embedded control plane and one zone's ovsdb-server; table in bin/scale-report.md.
	mkdir -p $(LOCALBIN)
	$(GO) build -o $(LOCALBIN)/udnkit-scale ./test/scale
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(LOCALBIN)/udnkit-scale -nodes=$(SCALE_NODES) -networks=$(SCALE_NETWORKS) \
		-pods=$(SCALE_PODS) -fractions=$(SCALE_FRACTIONS) -out=$(LOCALBIN)/scale-report.md -state-dir=$(LOCALBIN)/scale $(SCALE_FLAGS)

.PHONY: fuzz
fuzz: ## Fuzz the pod annotation parser and address checks, and admitted spec to OVN rows, for FUZZTIME (default 30s) each.
	$(GO) test ./webhooks/pod/ -run='^$$' -fuzz=FuzzDefaultNetworkSelection -fuzztime=$(FUZZTIME)
	$(GO) test ./dataplane/controllers/zone/ -run='^$$' -fuzz=FuzzAdmittedSpecToRows -fuzztime=$(FUZZTIME)

##@ Tools

.PHONY: envtest
envtest: ## Build (first time, ~15 min) or reuse kube-apiserver, kubectl and etcd for envtest.
	@K8S_VERSION=$(ENVTEST_K8S_VERSION) ETCD_VERSION=$(ETCD_VERSION) ENVTEST_STORE=$(ENVTEST_STORE) envtest/build-binaries.sh >/dev/null
	@echo "envtest binaries: $(ENVTEST_ASSETS)"

# The first run builds the root filesystem (about a minute); later runs only
# check the versions.
.PHONY: ovn
ovn: ## Provision (first time, ~1 min) or reuse OVN and Open vSwitch (versions: ovnk/ovn.go, dataplane/ovsdbserver/ovn.go) from Debian, no container engine.
	@$(OVN_PROVISION) >/dev/null
	@echo "OVN: $(OVN_DIR)/bin ($$(ovn-nbctl --version | head -1), NB schema $$(ovsdb-tool schema-version $(OVN_SCHEMA_DIR)/ovn-nb.ovsschema))"

$(CONTROLLER_GEN):
	mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN) $(GO) install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/controller-gen $@
