#!/usr/bin/env bash
# cases.sh: runs the live comparison of ../shared/upstream-live (upstream's
# ovnkube and udnkit on the same API state, Northbound rows matched) for each
# case below, in a copy of that harness extended with udnkit's flags per case
# (UD_FLAGS) and the networks the cases add; prints one table of counts.
#
#   UPSTREAM_GIT=<git dir of upstream ovn-kubernetes> test/upstreamlive/cases.sh [CASE...]
#
# Results: $LIVE_WORK/cases/<case>/compare*/ (summary.md, diff.txt,
# categories.md), the table in $LIVE_WORK/cases/table.md: the harness's raw
# counts, then those of both dumps normalised by normalise.py (host
# subnets, pod addresses, UIDs and tunnel keys reduced to tokens by node
# and pod) with the real differences, each listed in
# $LIVE_WORK/cases/<case>/real.md. COMPARE_ONLY=1 compares the cases' last
# dumps again without running them.
set -euo pipefail

. "$(cd "$(dirname "$0")" && pwd)/prepare.sh"

# case: extra manifests | upstream's gateway mode | EgressIP | udnkit's flags | upstream's extra flags |
# 1: udnkit's side gets node-a's default-network pod ports and entries (default_network.py)
# (upstream runs with kind's flags, EgressIP on unless the case says false)
declare -A CASES=(
	[base]="||true|--enable-egress-ip=true"
	[pods]="pods.yaml||true|--enable-egress-ip=true||1"
	[local]="pods.yaml|local|true|--gateway-mode=local --enable-egress-ip=true||1"
	[noeip]="pods.yaml||false|--enable-egress-ip=false||1"
	[cudn]="cudns.yaml cudn-pods.yaml||true|--enable-egress-ip=true"
	[svc]="pods.yaml svc.yaml||true|--enable-egress-ip=true||1"
	[mnp]="cudns.yaml cudn-pods.yaml pods.yaml mnp.yaml||true|--enable-egress-ip=true --enable-multi-networkpolicy=true|--enable-multi-networkpolicy|1"
	[vm]="vm-networks.yaml vm-pods.yaml||true|--enable-egress-ip=true"
	[vmmig]="vm-networks.yaml vm-pods.yaml vm-migration.yaml||true|--enable-egress-ip=true"
)
ORDER=(base pods local noeip cudn svc mnp vm vmmig)
[[ $# -gt 0 ]] && ORDER=("$@")

# COMPARE_ONLY=1 keeps each case's dumps and only compares again.
table=$L/cases/table.md
python3 "$H/normalise.py" --table-header >"$table"
for c in "${ORDER[@]}"; do
	IFS='|' read -r extra mode eip flags upflags defnet <<<"${CASES[$c]}"
	out=$L/cases/$c
	if [[ ${COMPARE_ONLY:-} == 1 ]]; then
		python3 "$H/normalise.py" --case "$c" --compare "$C/compare.py" "$out" >>"$table" || echo "| $c | (failed) |" >>"$table"
		continue
	fi
	files=""
	for f in $extra; do files="$files $H/manifests/$f"; done
	rm -rf "$out" && mkdir -p "$out"
	env UP_FLAGS="$upflags" LIVE_OUT="$out" PROJECT="$ROOT" EXTRA_MANIFESTS="$files" GATEWAY_MODE="${mode:-shared}" EGRESS_IP="$eip" \
		UD_FLAGS="$flags" DEFAULT_NETWORK="$defnet" "$C/run.sh" build >"$out/run.log" 2>&1
	for step in up ud compare; do
		env UP_FLAGS="$upflags" LIVE_OUT="$out" PROJECT="$ROOT" EXTRA_MANIFESTS="$files" GATEWAY_MODE="${mode:-shared}" EGRESS_IP="$eip" \
			UD_FLAGS="$flags" DEFAULT_NETWORK="$defnet" "$C/run.sh" "$step" >>"$out/run.log" 2>&1 || { echo "case $c: $step failed (see $out/run.log)" >&2; break; }
	done
	env LIVE_OUT="$out" "$C/run.sh" stop >>"$out/run.log" 2>&1 || true
	# raw counts from the harness's compare, then both dumps normalised
	# (normalise.py) and compared again: the real differences.
	python3 "$H/normalise.py" --case "$c" --compare "$C/compare.py" "$out" >>"$table" || echo "| $c | (failed) |" >>"$table"
done
cat "$table"
