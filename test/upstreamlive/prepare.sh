# prepare.sh (sourced by cases.sh and timing.sh): copies
# ../shared/upstream-live to $LIVE_WORK/harness-copy and patches the copy:
# udnkit's manager gets UD_FLAGS, extra manifests settle one by one, udnkit's
# wait names a row every case has, compare.py also matches the CUDN cases'
# networks. Sets H (this directory), ROOT, SHARED, L and C (the copy).
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
# The dataplane manager (one per zone, as the chart's DaemonSet) runs without
# leader election whatever UD_FLAGS says: it would contend for the reconciler
# manager's Lease.
sed -i 's|if k == "max-networks-per-namespace" {|if k == "max-networks-per-namespace" \|\| strings.HasPrefix(k, "leader-elect") {|' "$C/harness/main.go"
grep -q 'strings.HasPrefix(k, "leader-elect")' "$C/harness/main.go" || { echo "cases.sh: the harness's dataplane flags changed; adapt the leader-election patch" >&2; exit 1; }
# Upstream's ovnkube gets UP_FLAGS (the cases' feature flags udnkit has too).
sed -i 's|^\t\t--loglevel 5$|\t\t--loglevel 5 ${UP_FLAGS:-}|' "$C/run.sh"
grep -q 'loglevel 5 ${UP_FLAGS' "$C/run.sh" || { echo "cases.sh: upstream's flags in the harness changed; adapt the UP_FLAGS patch" >&2; exit 1; }
# CRDs neither side's harness installs (the MultiNetworkPolicy CRD, the
# chart's copy from its module) go in with the nodes: before upstream's
# ovnkube starts, and right after udnkit's control plane is up (its
# dataplane's watch waits for the kind).
mkdir -p "$C/manifests/crds" && cp "$ROOT/charts/udnkit/files/external-crds/multi-networkpolicies.k8s.cni.cncf.io.yaml" "$C/manifests/crds/"
sed -i 's|^\tkubectl --kubeconfig "$kc" apply -f "$M/base.yaml"$|&\n\tkubectl --kubeconfig "$kc" apply -f "$M/crds" \&\& kubectl --kubeconfig "$kc" wait --for=condition=Established --timeout=60s -f "$M/crds"|' "$C/run.sh"
grep -q 'apply -f "$M/crds"' "$C/run.sh" || { echo "cases.sh: the harness's apply_nodes changed; adapt the CRD patch" >&2; exit 1; }
# udnkit's nodes get the default network's host subnets upstream's cluster
# manager publishes in a real cluster (udnkit's isolation piece, the default
# network's ACLs for Primary-UDN pods, reads the management IPs from them);
# normalise.py reduces each side's to a token by node.
python3 - "$C/run.sh" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
anchor = '\tapply_nodes "$kc"\n\tapply_udns "$kc"\n\twait_for 180 "udnkit'
assert s.count(anchor) == 1, "the harness's ud() changed; adapt the default subnets patch"
subnets = {"node-a": '["10.244.0.0/24","fd00:10:244:1::/64"]', "node-b": '["10.244.1.0/24","fd00:10:244:2::/64"]',
           "node-c": '["10.244.2.0/24","fd00:10:244:3::/64"]'}
lines = "".join("\tkubectl --kubeconfig \"$kc\" annotate node %s 'k8s.ovn.org/node-subnets={\"default\":%s}'\n" % (n, v) for n, v in subnets.items())
s = s.replace(anchor, '\tapply_nodes "$kc"\n' + lines + anchor[len('\tapply_nodes "$kc"\n'):], 1)
open(p, "w").write(s)
PY
# DEFAULT_NETWORK=1: on udnkit's side, the default network's rows and pod
# entries of node-a's Primary-UDN pods (default_network.py), once the extra
# manifests are applied.
cp "$H/default_network.py" "$C/"
python3 - "$C/run.sh" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
anchor = '\tapply_extra "$kc"\n\tsettle "$nb"\n'
assert s.count(anchor) == 1, "the harness's ud() changed; adapt the DEFAULT_NETWORK patch"
s = s.replace(anchor, '\tapply_extra "$kc"\n\t[[ ${DEFAULT_NETWORK:-} != 1 ]] || python3 "$H/default_network.py" "$kc" "$nb"\n\tsettle "$nb"\n', 1)
open(p, "w").write(s)
PY
python3 - "$C/compare.py" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
anchor = '    "tenant-green_green": ("L3", "tenant.green_green_"),\n'
assert anchor in s, "compare.py's NETWORKS changed; adapt cases.sh"
s = s.replace(anchor, anchor + '    "cluster_udn_backend-l2": ("S2", "cluster_udn_backend.l2_"),\n'
              '    "cluster_udn_physnet-ext": ("LN", "cluster_udn_physnet.ext_"),\n'
              '    "cluster_udn_vm-l2": ("VM2", "cluster_udn_vm.l2_"),\n'
              '    "cluster_udn_vm-ln": ("VMLN", "cluster_udn_vm.ln_"),\n', 1)
open(p, "w").write(s)
PY

