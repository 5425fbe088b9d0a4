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

. "$(cd "$(dirname "$0")" && pwd)/prepare.sh"

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
