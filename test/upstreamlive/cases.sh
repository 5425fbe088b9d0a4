#!/usr/bin/env bash
# cases.sh: runs the live comparison of ../shared/upstream-live (upstream's
# ovnkube and udnkit on the same API state, Northbound rows matched) for each
# case below, in a copy of that harness extended with udnkit's flags per case
# (UD_FLAGS) and the networks the cases add; prints one table of counts.
#
#   UPSTREAM_GIT=<git dir of upstream ovn-kubernetes> test/upstreamlive/cases.sh [CASE...]
#
# Results: $LIVE_WORK/cases/<case>/compare*/ (summary.md, diff.txt,
# categories.md), the table in $LIVE_WORK/cases/table.md.
set -euo pipefail

H=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$H/../.." && pwd)
SHARED=${SHARED:-$ROOT/../shared/upstream-live}
L=${LIVE_WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/udnkit-upstream-live}
C=$L/harness-copy
mkdir -p "$L/cases"

# The harness copy: udnkit's manager gets UD_FLAGS; compare.py also matches
# the networks of the CUDN cases.
rm -rf "$C" && cp -r "$SHARED" "$C"
sed -i 's|--node-subnets=192.0.2.0/24,2001:db8::/64$|--node-subnets=192.0.2.0/24,2001:db8::/64 ${UD_FLAGS:-}|' "$C/run.sh"
# Each extra file settles before the next (svc.yaml's EndpointSlices name
# pods.yaml's pods, which both mirror controllers read with their addresses).
sed -i 's|apply -f "$f"; done|apply -f "$f"; sleep 5; done|' "$C/run.sh"
grep -q 'sleep 5; done' "$C/run.sh" || { echo "cases.sh: the harness's apply_extra changed; adapt the sleep patch" >&2; exit 1; }
# udnkit writes the Layer3 102 policies only with EgressIP (as upstream):
# wait for the Layer3 cluster router, which every case has.
sed -i 's|wait_for 180 "udnkit.s Layer3 policies" sh -c .*$|wait_for 180 "udnkit'"'"'s Layer3 cluster router" ovn-nbctl --db="$nb" get Logical_Router tenant.green_green_ovn_cluster_router name|' "$C/run.sh"
grep -q 'Layer3 cluster router' "$C/run.sh" || { echo "cases.sh: the harness's Layer3 wait changed; adapt the patch" >&2; exit 1; }
grep -q 'UD_FLAGS' "$C/run.sh" || { echo "cases.sh: the harness's ud() changed; adapt the UD_FLAGS patch" >&2; exit 1; }
python3 - "$C/compare.py" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
anchor = '    "tenant-green_green": ("L3", "tenant.green_green_"),\n'
assert anchor in s, "compare.py's NETWORKS changed; adapt cases.sh"
s = s.replace(anchor, anchor + '    "cluster_udn_backend-l2": ("S2", "cluster_udn_backend.l2_"),\n'
              '    "cluster_udn_physnet-ext": ("LN", "cluster_udn_physnet.ext_"),\n', 1)
open(p, "w").write(s)
PY

# case: extra manifests | upstream's gateway mode | EgressIP | udnkit's flags
# (upstream runs with kind's flags, EgressIP on unless the case says false)
declare -A CASES=(
	[base]="||true|--enable-egress-ip=true"
	[pods]="pods.yaml||true|--enable-egress-ip=true"
	[local]="pods.yaml|local|true|--gateway-mode=local --enable-egress-ip=true"
	[noeip]="pods.yaml||false|--enable-egress-ip=false"
	[cudn]="cudns.yaml cudn-pods.yaml||true|--enable-egress-ip=true"
	[svc]="pods.yaml svc.yaml||true|--enable-egress-ip=true"
)
ORDER=(base pods local noeip cudn svc)
[[ $# -gt 0 ]] && ORDER=("$@")

table=$L/cases/table.md
echo "| case | upstream rows | rows equal | differing only by udnkit's keys | differing | only upstream | only udnkit |" >"$table"
echo "|---|---:|---:|---:|---:|---:|---:|" >>"$table"
for c in "${ORDER[@]}"; do
	IFS='|' read -r extra mode eip flags <<<"${CASES[$c]}"
	files=""
	for f in $extra; do files="$files $H/manifests/$f"; done
	out=$L/cases/$c
	rm -rf "$out" && mkdir -p "$out"
	env LIVE_OUT="$out" PROJECT="$ROOT" EXTRA_MANIFESTS="$files" GATEWAY_MODE="${mode:-shared}" EGRESS_IP="$eip" \
		UD_FLAGS="$flags" "$C/run.sh" build >"$out/run.log" 2>&1
	for step in up ud compare; do
		env LIVE_OUT="$out" PROJECT="$ROOT" EXTRA_MANIFESTS="$files" GATEWAY_MODE="${mode:-shared}" EGRESS_IP="$eip" \
			UD_FLAGS="$flags" "$C/run.sh" "$step" >>"$out/run.log" 2>&1 || { echo "case $c: $step failed (see $out/run.log)" >&2; break; }
	done
	env LIVE_OUT="$out" "$C/run.sh" stop >>"$out/run.log" 2>&1 || true
	s=$(ls "$out"/compare*/summary.md 2>/dev/null | head -1)
	if [[ -z $s ]]; then
		echo "| $c | (failed) | | | | | |" >>"$table"
		continue
	fi
	# the summary's total row: equal | differing (of which udnkit keys) | only upstream | only udnkit
	python3 - "$s" "$c" >>"$table" <<'PY'
import re, sys
tot = [l for l in open(sys.argv[1]) if l.startswith("| **total**")][0]
cells = [c.strip() for c in tot.strip().strip("|").split("|")]
eq = int(cells[1]); m = re.match(r"(\d+) \((\d+)\)", cells[2]); diff, own = int(m.group(1)), int(m.group(2))
onlyup, onlyud = int(cells[3]), int(cells[4])
print(f"| {sys.argv[2]} | {eq + diff + onlyup} | {eq} | {own} | {diff - own} | {onlyup} | {onlyud} |")
PY
done
cat "$table"
