#!/usr/bin/env bash
# Builds kube-apiserver, kubectl and etcd for envtest from the Go module proxy and
# caches them by version in setup-envtest's store layout, outside the checkout:
#   ${XDG_DATA_HOME:-~/.local/share}/kubebuilder-envtest/k8s/<version>-linux-<arch>/
# Release downloads (setup-envtest) are not reachable here; the module proxy is.
# k8s.io/kubernetes replaces its staging modules with ./staging paths, so a plain
# `go install` fails; a throwaway wrapper module with one replace per staging module
# works. Prints the directory on stdout when done; progress goes to stderr.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:?K8S_VERSION (e.g. 1.37.2) is required}"
ETCD_VERSION="${ETCD_VERSION:?ETCD_VERSION (e.g. 3.7.0) is required}"
ARCH="$(go env GOARCH)"
STORE_ROOT="${ENVTEST_STORE:-${XDG_DATA_HOME:-$HOME/.local/share}/kubebuilder-envtest/k8s}"
DEST="${STORE_ROOT}/${K8S_VERSION}-linux-${ARCH}"
STAMP="${DEST}/.udnkit-built-etcd-${ETCD_VERSION}"

log() { printf '[envtest-binaries %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

complete() {
	[[ -f "${STAMP}" && -x "${DEST}/kube-apiserver" && -x "${DEST}/etcd" && -x "${DEST}/kubectl" ]]
}

if complete; then
	echo "${DEST}"
	exit 0
fi

mkdir -p "${STORE_ROOT}"
# One builder at a time: parallel `make test` runs wait for the first build.
exec 9>"${STORE_ROOT}/.udnkit-build.lock"
log "waiting for the build lock ${STORE_ROOT}/.udnkit-build.lock"
flock 9
if complete; then
	echo "${DEST}"
	exit 0
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/udnkit-envtest-build.XXXXXX")"
HEARTBEAT_PID=""
cleanup() {
	[[ -n "${HEARTBEAT_PID}" ]] && kill "${HEARTBEAT_PID}" 2>/dev/null || true
	rm -rf "${WORK}"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

START=$(date +%s)
log "building kube-apiserver + kubectl v${K8S_VERSION} and etcd v${ETCD_VERSION} from the Go module proxy"
log "this takes 8-15 minutes on 2 cores the first time; the result is cached in ${DEST}"

cd "${WORK}"
go mod init udnkit.local/envtest-binaries >/dev/null 2>&1
STAGING_VERSION="v0.${K8S_VERSION#*.}"
log "downloading k8s.io/kubernetes@v${K8S_VERSION} to read its staging modules"
KGOMOD="$(go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",\{0,1\}$/\1/p')"
[[ -f "${KGOMOD}" ]] || { log "could not find k8s.io/kubernetes go.mod"; exit 1; }
mapfile -t STAGING < <(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/.*#\1#p' "${KGOMOD}" | sort -u)
[[ ${#STAGING[@]} -gt 0 ]] || { log "no staging modules found in ${KGOMOD}"; exit 1; }
log "pinning ${#STAGING[@]} staging modules to ${STAGING_VERSION}"
for m in "${STAGING[@]}"; do
	go mod edit -replace "${m}=${m}@${STAGING_VERSION}"
done
go mod edit -require "k8s.io/kubernetes@v${K8S_VERSION}"

log "resolving dependencies (go get -tool)"
go get -tool \
	"k8s.io/kubernetes/cmd/kube-apiserver@v${K8S_VERSION}" \
	"k8s.io/kubernetes/cmd/kubectl@v${K8S_VERSION}" \
	"go.etcd.io/etcd/server/v3@v${ETCD_VERSION}" 2>&1 | sed 's/^/    /' >&2

MAJOR="${K8S_VERSION%%.*}"
MINOR="${K8S_VERSION#*.}"; MINOR="${MINOR%%.*}"
V=k8s.io/component-base/version
LDFLAGS="-s -w -X ${V}.gitVersion=v${K8S_VERSION} -X ${V}.gitMajor=${MAJOR} -X ${V}.gitMinor=${MINOR} -X ${V}.gitTreeState=clean -X ${V}.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"

OUT="${WORK}/out"
mkdir -p "${OUT}"
BUILDLOG="${WORK}/build.log"
: >"${BUILDLOG}"
( while sleep 30; do
	log "still compiling: $(wc -l <"${BUILDLOG}") packages so far, $(( $(date +%s) - START ))s elapsed"
done ) 9>&- &
HEARTBEAT_PID=$!

build() {
	local name="$1" pkg="$2"
	log "compiling ${name} (${pkg})"
	go build -v -ldflags "${LDFLAGS}" -o "${OUT}/${name}" "${pkg}" 2>>"${BUILDLOG}" || {
		tail -n 40 "${BUILDLOG}" >&2
		exit 1
	}
}
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kubectl k8s.io/kubernetes/cmd/kubectl
build etcd go.etcd.io/etcd/server/v3

mkdir -p "${DEST}"
for b in kube-apiserver kubectl etcd; do
	mv -f "${OUT}/${b}" "${DEST}/${b}"
done
touch "${STAMP}"
log "done in $(( $(date +%s) - START ))s: ${DEST}"
echo "${DEST}"
