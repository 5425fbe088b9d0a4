#!/usr/bin/env bash
# timing.sh: how long udnkit and upstream's ovnkube take to write (and to
# remove) a whole UDN network in zone node-a, from the same create, on the
# same machine and OVN. Starts both sides with ../shared/upstream-live (the
# base case: three nodes, two UDNs, a Service each), then per sample applies
# one new namespace with a Primary Layer2 (or Layer3) UDN to both apiservers
# at once and watches both Northbound databases (ovsdb-client --timestamp
# monitor): a side's time is from its apiserver's first watch event of the
# sample's UDNs (the creation; for a deletion, the deletion timestamp set)
# to its last Northbound update (NB_Global aside) before 8 s of quiet; the
# table also gives the time from kubectl's start, which carries kubectl's
# own start-up. Then the same for deleting the UDN, and for BULK UDNs
# (Primary Layer2, one namespace each) created by one `kubectl create` of
# one file and deleted by parallel kubectl deletes; kubectl sends a bulk's
# requests one after another (and each process costs CPU on a small
# machine), so the table also gives the time from the last UDN's
# announcement, what the controllers add after the client is done.
#
#   UPSTREAM_GIT=<git dir of upstream ovn-kubernetes> test/upstreamlive/timing.sh
#
# SAMPLES (5) samples per kind; BULK (100). Results: $LIVE_WORK/timing/
# (samples.tsv, table.md, each sample's monitor output).
set -euo pipefail

. "$(cd "$(dirname "$0")" && pwd)/prepare.sh"
SAMPLES=${SAMPLES:-5}
BULK=${BULK:-100}
T=$L/timing
rm -rf "$T" && mkdir -p "$T/samples"
PATH=${KUBEBUILDER_ASSETS:-$HOME/.local/share/kubebuilder-envtest/k8s/1.37.2-linux-amd64}:$PATH
# udnkit's manager runs as the chart installs it (leaderElection.enabled):
# one elected reconciler, the only writer of network and node IDs.
run() { env LIVE_OUT="$T/out" PROJECT="$ROOT" UD_FLAGS="--enable-egress-ip=true --leader-elect=true --leader-election-namespace=kube-system" "$C/run.sh" "$@"; }
trap 'run stop >>"$T/run.log" 2>&1 || true' EXIT
for step in build up ud; do
	run "$step" >>"$T/run.log" 2>&1 || { echo "timing.sh: $step failed (see $T/run.log)" >&2; exit 1; }
done
PATH=$(ls -d "$HOME"/.cache/udnkit/ovn-*/bin | tail -1):$PATH
KC_UP=$L/up/kubeconfig KC_UD=$L/ud/kubeconfig
NB_UP=unix:$L/up/run/ovnnb_db.sock NB_UD=unix:$L/ud/ovn/ovnnb.sock

# manifest KIND NAME...: a namespace and a Primary UDN of KIND (l2|l3) per name.
manifest() {
	local kind=$1 n
	shift
	for n in "$@"; do
		printf -- '---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n  labels:\n    k8s.ovn.org/primary-user-defined-network: ""\n' "$n"
		printf -- '---\napiVersion: k8s.ovn.org/v1\nkind: UserDefinedNetwork\nmetadata:\n  name: net\n  namespace: %s\nspec:\n' "$n"
		if [[ $kind == l2 ]]; then
			printf '  topology: Layer2\n  layer2:\n    role: Primary\n    subnets: ["10.150.0.0/16", "2001:db8:150::/60"]\n'
		else
			printf '  topology: Layer3\n  layer3:\n    role: Primary\n    subnets:\n    - {cidr: 10.250.0.0/16, hostSubnet: 24}\n    - {cidr: "2001:db8:250::/48", hostSubnet: 64}\n'
		fi
	done
}

# measure LABEL CMD...: runs CMD with KC set to each side's kubeconfig, both
# at once, while monitoring both Northbound databases; appends one line per
# side to samples.tsv.
measure() {
	local label=$1 dir=$T/samples/$1 side
	shift
	mkdir -p "$dir"
	stdbuf -oL ovsdb-client --timestamp monitor "$NB_UP" OVN_Northbound ALL >"$dir/up.mon" 2>/dev/null &
	local mon_up=$!
	stdbuf -oL ovsdb-client --timestamp monitor "$NB_UD" OVN_Northbound ALL >"$dir/ud.mon" 2>/dev/null &
	local mon_ud=$!
	python3 "$H/timing.py" watch "$KC_UP" "$dir/up.watch" &
	local watch_up=$!
	python3 "$H/timing.py" watch "$KC_UD" "$dir/ud.watch" &
	local watch_ud=$!
	sleep 2 # both monitors have their initial contents, both watches run
	local t0
	t0=$(date +%s.%N)
	KC=$KC_UP "$@" >"$dir/up.apply" 2>&1 &
	local a=$!
	KC=$KC_UD "$@" >"$dir/ud.apply" 2>&1 &
	local b=$!
	wait $a $b
	# quiet: neither monitor's output grew for 8 s (at most 300 s)
	local last="" now quiet=0
	for _ in $(seq 1 600); do
		now=$(stat -c %s "$dir/up.mon" "$dir/ud.mon" | tr '\n' ' ')
		if [[ $now == "$last" ]]; then quiet=$((quiet + 1)); else quiet=0; last=$now; fi
		((quiet >= 16)) && break
		sleep 0.5
	done
	kill $mon_up $mon_ud $watch_up $watch_ud 2>/dev/null || true
	wait $mon_up $mon_ud $watch_up $watch_ud 2>/dev/null || true
	for side in up ud; do
		python3 "$H/timing.py" sample "$dir/$side.mon" "$(python3 "$H/timing.py" first "$dir/$side.watch" "$t0")" "$t0" \
			"$(python3 "$H/timing.py" lastfirst "$dir/$side.watch" "$t0")" |
			sed "s|^|$label\t$side\t|" >>"$T/samples.tsv"
	done
}

apply_file() { kubectl --kubeconfig "$KC" apply -f "$1"; }
create_file() { kubectl --kubeconfig "$KC" create -f "$1"; }
delete_file() { kubectl --kubeconfig "$KC" delete --wait=false -f "$1"; }
delete_udns() { kubectl --kubeconfig "$KC" delete udn --wait=false -n "$@" net; }

for i in $(seq 1 "$SAMPLES"); do
	for kind in l2 l3; do
		f=$T/samples/$kind-$i.yaml
		manifest "$kind" "tm-$kind-$i" >"$f"
		measure "create-$kind-$i" apply_file "$f"
		measure "delete-$kind-$i" delete_udns "tm-$kind-$i"
	done
done
names=()
for i in $(seq 1 "$BULK"); do names+=("bulk-$i"); done
manifest l2 "${names[@]}" >"$T/samples/bulk.yaml"
measure "create-bulk$BULK-1" create_file "$T/samples/bulk.yaml"
measure "delete-bulk$BULK-1" sh -c 'for n in "$@"; do echo "$n"; done | xargs -P8 -I{} kubectl --kubeconfig "$KC" delete udn --wait=false -n {} net' _ "${names[@]}"
python3 "$H/timing.py" table "$T/samples.tsv" >"$T/table.md"
cat "$T/table.md"
