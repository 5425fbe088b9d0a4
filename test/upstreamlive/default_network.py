#!/usr/bin/env python3
"""default_network.py KUBECONFIG NB: on udnkit's side, what OVN-Kubernetes'
default network writes in a cluster for the zone's (node-a's) pods in
Primary-UDN namespaces: each pod's default-network port (on a switch
node-a) and its "default" entry (role infrastructure-locked) in
k8s.ovn.org/pod-networks, next to the entries udnkit's manager writes. With
them udnkit's isolation port group has its members, and a pod's
k8s.ovn.org/open-default-ports its ACLs, as upstream's default network
controller writes them."""
import json
import subprocess
import sys
import time

kc, nb = sys.argv[1], sys.argv[2]
PRIMARY = ("tenant-blue", "tenant-green")
CHASSIS_A = "8d3c1c5e-1f0a-4c1e-9a61-0a0000000a01"


def kubectl(*args):
    return subprocess.run(["kubectl", "--kubeconfig", kc, *args], check=True, capture_output=True, text=True).stdout


def nbctl(*args):
    subprocess.run(["ovn-nbctl", "--db=" + nb, *args], check=True, capture_output=True, text=True)


pods = json.loads(kubectl("get", "pods", "-A", "-o", "json"))["items"]
nbctl("--may-exist", "ls-add", "node-a")
for i, pod in enumerate(p for p in pods if p["spec"].get("nodeName") == "node-a" and p["metadata"]["namespace"] in PRIMARY):
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    v4, v6 = "10.244.0.%d" % (100 + i), "fd00:10:244:1::%x" % (100 + i)
    mac = "0a:58:0a:f4:00:%02x" % (100 + i)
    # the port as upstream's default network controller writes it (pods.go)
    port, addrs = "%s_%s" % (ns, name), "%s %s %s" % (mac, v4, v6)
    nbctl("--may-exist", "lsp-add", "node-a", port, "--", "lsp-set-addresses", port, addrs,
          "--", "lsp-set-port-security", port, addrs,
          "--", "set", "Logical_Switch_Port", port, "external_ids:namespace=" + ns, "external_ids:pod=true",
          "options:iface-id-ver=" + pod["metadata"]["uid"], "options:requested-chassis=" + CHASSIS_A)
    entry = {"ip_addresses": [v4 + "/24", v6 + "/64"], "mac_address": mac, "gateway_ips": ["10.244.0.1", "fd00:10:244:1::1"],
             "ip_address": v4 + "/24", "gateway_ip": "10.244.0.1", "role": "infrastructure-locked"}
    # udnkit's manager writes the UDN's entry: add "default" next to it,
    # retrying on a conflicting write
    for _ in range(20):
        cur = json.loads(kubectl("get", "pod", "-n", ns, name, "-o", "json"))
        ann = json.loads(cur["metadata"].get("annotations", {}).get("k8s.ovn.org/pod-networks", "{}"))
        ann["default"] = entry
        cur["metadata"]["annotations"]["k8s.ovn.org/pod-networks"] = json.dumps(ann, separators=(",", ":"))
        r = subprocess.run(["kubectl", "--kubeconfig", kc, "replace", "-f", "-"], input=json.dumps(cur), capture_output=True, text=True)
        if r.returncode == 0:
            print("default network port and entry: %s/%s" % (ns, name))
            break
        time.sleep(1)
    else:
        sys.exit("default_network.py: could not annotate %s/%s: %s" % (ns, name, r.stderr))
