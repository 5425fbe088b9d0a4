#!/usr/bin/env bash
# Provisions OVN and Open vSwitch from Debian's archive (suite sid) into a root
# filesystem cached by version outside the checkout, with no container engine:
#   ${XDG_CACHE_HOME:-~/.cache}/udnkit/ovn-<OVN_VERSION>/rootfs   the root filesystem
#   ${XDG_CACHE_HOME:-~/.cache}/udnkit/ovn-<OVN_VERSION>/bin      one wrapper per tool
# A wrapper runs the tool with the root filesystem's own dynamic loader and
# libraries, so every path (sockets, database files, logs) is the host's: no
# chroot and no bind mount. The build goes to a temporary directory beside the
# destination and is renamed into place once its versions check out; a stamp
# file marks a complete one, so a second run returns at once.
#
# Usage: OVN_VERSION=26.03.1 OVS_VERSION=4.0.0 provision-ovn.sh [--print-dir]
# Prints the directory on stdout when done; progress goes to stderr.
# OVN_APT_MIRROR overrides the Debian mirror (default: the one apt already uses).
set -euo pipefail

OVN_VERSION="${OVN_VERSION:?OVN_VERSION (e.g. 26.03.1) is required}"
OVS_VERSION="${OVS_VERSION:?OVS_VERSION (e.g. 4.0.0) is required}"
CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/udnkit"
DEST="${CACHE_ROOT}/ovn-${OVN_VERSION}"
STAMP="${DEST}/.provisioned-ovs-${OVS_VERSION}"
SUITE=sid
PACKAGES=ovn-central,ovn-host,openvswitch-switch,iproute2,iputils-ping
# The tools udnkit, its tests and a test cluster run.
TOOLS=(ovsdb-server ovsdb-tool ovsdb-client ovn-northd ovn-nbctl ovn-sbctl ovn-trace ovn-controller ovn-appctl
	ovs-vswitchd ovs-vsctl ovs-appctl ovs-ofctl ovs-dpctl)

if [[ "${1:-}" == "--print-dir" ]]; then
	echo "${DEST}"
	exit 0
fi

log() { printf '[ovn %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# versions_ok DIR: the wrappers in DIR/bin run and report the wanted versions.
versions_ok() {
	local northd server
	northd="$("$1/bin/ovn-northd" --version 2>&1 | head -1)" || return 1
	server="$("$1/bin/ovsdb-server" --version 2>&1 | head -1)" || return 1
	[[ "${northd}" == "ovn-northd ${OVN_VERSION}" && "${server}" == "ovsdb-server (Open vSwitch) ${OVS_VERSION}" ]] || {
		log "${1}: found '${northd}' and '${server}', want ovn-northd ${OVN_VERSION} and ovsdb-server ${OVS_VERSION}"
		return 1
	}
}

complete() { [[ -f "${STAMP}" ]] && versions_ok "${DEST}"; }

if complete; then
	echo "${DEST}"
	exit 0
fi

mkdir -p "${CACHE_ROOT}"
# One builder at a time: parallel make runs wait for the first build.
exec 9>"${CACHE_ROOT}/.ovn-${OVN_VERSION}.lock"
flock 9
if complete; then
	echo "${DEST}"
	exit 0
fi

# The Debian mirror apt is configured with (deb822 URIs: or one-line deb), so
# the build reaches the archive the way the machine's own apt does.
mirror() {
	if [[ -n "${OVN_APT_MIRROR:-}" ]]; then
		echo "${OVN_APT_MIRROR}"
		return
	fi
	local m
	m="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's#^URIs:[[:space:]]*\([^[:space:]]*/debian\)/\{0,1\}[[:space:]]*$#\1#p' | head -1)"
	[[ -n "${m}" ]] || m="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		sed -n 's#^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]*/debian\)/\{0,1\}[[:space:]].*#\2#p' | head -1)"
	[[ -n "${m}" ]] || { log "no Debian mirror found in /etc/apt; set OVN_APT_MIRROR"; exit 1; }
	echo "${m}"
}

if ! command -v mmdebstrap >/dev/null; then
	log "installing mmdebstrap (Debian package)"
	apt-get update >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mmdebstrap >&2
fi

WORK="$(mktemp -d "${CACHE_ROOT}/.ovn-${OVN_VERSION}.build.XXXXXX")"
trap 'rm -rf "${WORK}"' EXIT
trap 'exit 130' INT TERM

START=$(date +%s)
MIRROR="$(mirror)"
log "building OVN ${OVN_VERSION} + Open vSwitch ${OVS_VERSION} from Debian ${SUITE} (about a minute); cached in ${DEST}"
# The archive snapshot's Release file may be past its Valid-Until date.
mmdebstrap --variant=apt --quiet \
	--aptopt='Acquire::Check-Valid-Until "false"' \
	--include="${PACKAGES}" \
	"${SUITE}" "${WORK}/rootfs" \
	"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${MIRROR} ${SUITE} main" >&2

ROOT="${DEST}/rootfs"
MULTIARCH="$(cd "${WORK}/rootfs/usr/lib" && dirname "$(ls -d ./*/libc.so.6 | head -1)")"
MULTIARCH="${MULTIARCH#./}"
LOADER="$(cd "${WORK}/rootfs/usr/lib/${MULTIARCH}" && ls ld-linux*.so.* | head -1)"
[[ -n "${MULTIARCH}" && -n "${LOADER}" ]] || { log "no C library or dynamic loader in the root filesystem"; exit 1; }

# inroot PATH: PATH inside the root filesystem with its symbolic links
# followed there (Debian's alternatives are absolute links).
inroot() {
	local p="$1" t n=0
	while [[ -L "${WORK}/rootfs${p}" ]]; do
		t="$(readlink "${WORK}/rootfs${p}")"
		[[ "${t}" == /* ]] && p="${t}" || p="$(dirname "${p}")/${t}"
		((++n < 20)) || { log "symbolic link loop at ${p}"; exit 1; }
	done
	echo "${p}"
}

mkdir -p "${WORK}/bin"
for tool in "${TOOLS[@]}"; do
	path=""
	for d in /usr/sbin /usr/bin; do
		[[ -e "${WORK}/rootfs${d}/${tool}" || -L "${WORK}/rootfs${d}/${tool}" ]] && path="$(inroot "${d}/${tool}")" && break
	done
	[[ -n "${path}" && -x "${WORK}/rootfs${path}" ]] || { log "${tool} is missing from the root filesystem"; exit 1; }
	cat >"${WORK}/bin/${tool}" <<EOF
#!/bin/sh
# ${tool} of OVN ${OVN_VERSION} / Open vSwitch ${OVS_VERSION} (make ovn), run with its
# root filesystem's loader and libraries; paths stay the host's.
R='${ROOT}'
export OVS_PKGDATADIR="\$R/usr/share/openvswitch" OVN_PKGDATADIR="\$R/usr/share/ovn"
exec "\$R/usr/lib/${MULTIARCH}/${LOADER}" --library-path "\$R/usr/lib/${MULTIARCH}" --argv0 ${tool} "\$R${path}" "\$@"
EOF
	chmod 0755 "${WORK}/bin/${tool}"
done

chmod 0755 "${WORK}"
rm -rf "${DEST}"
mv "${WORK}" "${DEST}"
trap - EXIT
versions_ok "${DEST}" || { rm -rf "${DEST}"; exit 1; }
touch "${STAMP}"
log "done in $(($(date +%s) - START))s: ${DEST}/bin"
echo "${DEST}"
