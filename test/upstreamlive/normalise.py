#!/usr/bin/env python3
"""normalise.py: the real differences of one live case.

    normalise.py --table-header
    normalise.py --case NAME --compare COMPARE_PY CASEDIR

CASEDIR holds a case's dumps (up*-nb.json, ud-nb.json, up*-api.yaml,
ud-api.yaml) and the harness's raw comparison (compare*/summary.md). Both
Northbound dumps are rewritten into CASEDIR/norm/ so that what legitimately
differs between two runs reads the same on both sides:

- each node's host subnet of a Layer3 or the default network
  (k8s.ovn.org/node-subnets, which each
  side's cluster manager hands out in its own order) becomes a token by
  network, node and family, and every address inside it (router port,
  management port, gateway and pod addresses, the MACs derived from them)
  an offset from that token;
- a pod port's addresses (allocated in pod-arrival order) become tokens by
  port name, wherever they appear (address sets, load balancers, matches),
  a load balancer's backends sorted (both sides list them in address
  order); its requested-tnl-key (Layer2 tunnel keys, the same race) too;
- a pod port's iface-id-ver (the pod UID) becomes the port's name;
- `up` on remote ports (Southbound-derived; no ovn-controller runs here) is
  dropped.

The normalised dumps are compared with the harness's compare.py
(CASEDIR/compare-norm/); a row that still differs in anything but udnkit's
ownership keys (k8s.ovn.org/udnkit-*, and k8s.ovn.org/network or
k8s.ovn.org/topology on rows upstream leaves without them) is a real
difference unless EXPLAINED names it, and so is a row only one side has
unless EXPLAINED_ROWS names it. Prints the case's table row and
writes CASEDIR/real.md: every real difference, then the rows only one side
has after normalisation.
"""
import glob
import ipaddress
import json
import os
import re
import subprocess
import sys

import yaml

OWNERSHIP = ("external_ids:k8s.ovn.org/network", "external_ids:k8s.ovn.org/topology")

# Differences the harness itself causes, each with the reason; a matching
# column is counted as explained, not real. (table, column prefix, test on
# (upstream, udnkit), reason)
NO_REMOTE_ZONES = ("harness: no ovnkube-controller runs for zones node-b and node-c, so upstream's Layer3 pods there "
                   "get no address (udnkit's manager allocates every node's)")
REMOTE_TOKEN = re.compile(r"^<\S+ \{node\.[BC]\} v[46]\+\d+>$")


def only_remote_extra(up, ud):
    """ud lists what up lists and remote zones' Layer3 addresses."""
    up = up if isinstance(up, list) else [up] if up else []
    ud = ud if isinstance(ud, list) else [ud] if ud else []
    extra = [x for x in ud if x not in up]
    return set(up) <= set(ud) and extra and all(isinstance(x, str) and REMOTE_TOKEN.match(x) for x in extra)


EXPLAINED = [
    # the mirror EndpointSlice fails as a whole on the remote pod without
    # an address (endpointslice_mirror_controller.go "failed to determine
    # the Pod IP")
    ("Load_Balancer", "vips:", lambda up, ud: up == "" and ud not in ("", None), NO_REMOTE_ZONES),
    ("Address_Set", "addresses", only_remote_extra, NO_REMOTE_ZONES),
]

# Rows only one side has for a known reason: (kind, table, test on the
# row's columns, reason).
EXPLAINED_ROWS = []

MAC_RE = re.compile(r"(?<![0-9a-fA-F:])([0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5})(?![0-9a-fA-F:])")
# an address with its prefix length, if any; an IPv6 address may follow a
# ':' separator (the ':' before it is group 1)
V4_RE = re.compile(r"(?<![0-9.])()(\d{1,3}(?:\.\d{1,3}){3})(?![0-9.])(/\d+)?")
V6_RE = re.compile(r"(?<![0-9A-Za-z._-])(:?)([0-9a-fA-F]{0,4}(?::[0-9a-fA-F]{0,4}){2,7})(?![0-9a-fA-F:])(/\d+)?")

HEADER = ("| case | upstream rows | rows equal | differing only by udnkit's keys | differing | only upstream | only udnkit "
          "| normalised: equal | keys only | explained | **real differences** | only upstream | only udnkit |")


def node_subnets(api_path):
    """{(network, node): [ip_network...]}, the default network's included
    (the isolation ACLs name its management IPs)."""
    out = {}
    for doc in yaml.safe_load_all(open(api_path)):
        for item in (doc or {}).get("items", []):
            if item.get("kind") != "Node":
                continue
            ann = item["metadata"].get("annotations", {})
            subs = json.loads(ann.get("k8s.ovn.org/node-subnets", "{}"))
            for net, cidrs in subs.items():
                cidrs = [cidrs] if isinstance(cidrs, str) else cidrs
                out[(net, item["metadata"]["name"])] = [ipaddress.ip_network(c) for c in cidrs]
    return out


def get_map(row, col):
    v = row.get(col)
    return dict(v[1]) if isinstance(v, list) and v and v[0] == "map" else {}


def set_items(v):
    if isinstance(v, list) and v and v[0] == "set":
        return v[1]
    return [v] if isinstance(v, str) and v else []


def pod_ports(tables):
    """The pod ports: name -> row."""
    out = {}
    for row in tables.get("Logical_Switch_Port", {}).values():
        ids, opts = get_map(row, "external_ids"), get_map(row, "options")
        if ids.get("pod") == "true" or "iface-id-ver" in opts:
            out[row["name"]] = row
    return out


class Normaliser:
    def __init__(self, tables, subnets):
        self.subnets = subnets
        # pod addresses first: a pod's address is its own, whatever subnet
        self.addr = {}
        self.macs = {}
        for name, row in pod_ports(tables).items():
            for a in set_items(row.get("addresses")):
                parts = a.split()
                if not parts or parts[0] in ("router", "unknown", "dynamic"):
                    continue
                self.macs[parts[0].lower()] = "<mac of pod %s>" % name
                for p in parts[1:]:
                    try:
                        ip = ipaddress.ip_address(p)
                    except ValueError:
                        continue
                    self.addr[ip] = "<v%d of pod %s>" % (ip.version, name)

    def ip_token(self, ip, plen=None):
        """ip's token; plen, the prefix length it is written with: a
        prefix wider than a node subnet (the network's) is left alone."""
        if ip in self.addr and plen is None:
            return self.addr[ip]
        for (net, node), nets in self.subnets.items():
            for n in nets:
                if n.version == ip.version and ip in n and (plen is None or plen >= n.prefixlen):
                    return "<%s %s v%d+%d>" % (net, node, ip.version, int(ip) - int(n.network_address))
        return None

    def mac(self, m):
        s = m.group(1)
        if s.lower() in self.macs:
            return self.macs[s.lower()]
        b = s.lower().split(":")
        if b[:2] == ["0a", "58"]:
            t = self.ip_token(ipaddress.ip_address(".".join(str(int(x, 16)) for x in b[2:])))
            if t:
                return "<mac of %s>" % t
        return s

    def ip(self, m):
        sep, s, plen = m.group(1), m.group(2), m.group(3) or ""
        try:
            ip = ipaddress.ip_address(s)
        except ValueError:
            try:
                ip, sep, s = ipaddress.ip_address(sep + s), "", sep + s
            except ValueError:
                return m.group(0)
        t = self.ip_token(ip, int(plen[1:]) if plen else None)
        return sep + (t or s) + plen

    def string(self, s):
        s = MAC_RE.sub(self.mac, s)
        s = V4_RE.sub(self.ip, s)
        return V6_RE.sub(self.ip, s)

    def value(self, v):
        if isinstance(v, str):
            return self.string(v)
        if isinstance(v, list) and len(v) == 2 and v[0] == "set":
            return ["set", [self.value(x) for x in v[1]]]
        if isinstance(v, list) and len(v) == 2 and v[0] == "map":
            return ["map", [[self.value(k), self.value(x)] for k, x in v[1]]]
        return v


def normalise(tables, subnets):
    n = Normaliser(tables, subnets)
    pods = set(pod_ports(tables))
    out = {}
    for t, rows in tables.items():
        out[t] = {}
        for u, row in rows.items():
            row = dict(row)
            if t == "Logical_Switch_Port":
                opts = get_map(row, "options")
                if row["name"] in pods:
                    if "iface-id-ver" in opts:
                        opts["iface-id-ver"] = "<uid of pod %s>" % row["name"]
                    if "requested-tnl-key" in opts:
                        opts["requested-tnl-key"] = "<tunnel key of pod %s>" % row["name"]
                    row["options"] = ["map", sorted([k, v] for k, v in opts.items())]
                if row.get("type") == "remote":
                    row["up"] = ["set", []]
            row = {c: (v if c == "_uuid" else n.value(v)) for c, v in row.items()}
            if t == "Load_Balancer" and isinstance(row.get("vips"), list) and row["vips"][0] == "map":
                # backends in address order, which pod tokens do not keep
                row["vips"] = ["map", [[k, ",".join(sorted(v.split(",")))] for k, v in row["vips"][1]]]
            out[t][u] = row
    return out


def one(pattern):
    got = sorted(p for p in glob.glob(pattern) if "-sb" not in os.path.basename(p))
    if not got:
        raise SystemExit("normalise.py: no %s" % pattern)
    return got[0]


def raw_counts(casedir):
    s = sorted(p for p in glob.glob(os.path.join(casedir, "compare*", "summary.md")) if "compare-norm" not in p)
    if not s:
        raise SystemExit("normalise.py: no raw comparison in %s" % casedir)
    return totals(s[0])


def totals(summary):
    tot = [line for line in open(summary) if line.startswith("| **total**")][0]
    cells = [c.strip() for c in tot.strip().strip("|").split("|")]
    m = re.match(r"(\d+) \((\d+)\)", cells[2])
    return {"equal": int(cells[1]), "diff": int(m.group(1)), "keys": int(m.group(2)),
            "only_up": int(cells[3]), "only_ud": int(cells[4])}


def ownership(d):
    c = d["column"]
    return d["upstream"] is None and (c.startswith("external_ids:k8s.ovn.org/udnkit-") or c in OWNERSHIP)


def explained(table, d):
    for t, prefix, test, why in EXPLAINED:
        if t == table and d["column"].startswith(prefix) and test(d["upstream"], d["udnkit"]):
            return why
    return None


def show(v):
    if isinstance(v, list):
        return "[" + ", ".join(str(x) for x in v) + "]"
    return json.dumps(v) if not isinstance(v, str) else v


def explained_row(d):
    cols = d["upstream" if d["kind"] == "only-upstream" else "udnkit"]
    for kind, table, test, why in EXPLAINED_ROWS:
        if kind == d["kind"] and table == d["table"] and test(cols):
            return why
    return None


def classify(diff, real_md):
    """Counts: keys (rows differing only by ownership keys), explained and
    real (differing rows, and rows only one side has), only_up, only_ud."""
    c = {"keys": 0, "explained": 0, "real": 0, "only_up": 0, "only_ud": 0}
    real, expl, only = [], [], []
    for d in diff:
        if d["kind"] != "differs":
            c["only_up" if d["kind"] == "only-upstream" else "only_ud"] += 1
            why = explained_row(d)
            c["explained" if why else "real"] += 1
            only.append((d, why))
            continue
        cols = [x for x in d["columns"] if not x["child_list"] and not ownership(x)]
        if not cols:
            c["keys"] += 1
            continue
        why = [explained(d["table"], x) for x in cols]
        if all(why):
            c["explained"] += 1
            expl.append((d, cols, why))
        else:
            c["real"] += 1
            real.append((d, [x for x, w in zip(cols, why) if not w]))
    with open(real_md, "w") as f:
        f.write("# Real differences after normalisation (normalise.py)\n\n")
        f.write("| table | row | column | upstream | udnkit |\n|---|---|---|---|---|\n")
        for d, cols in real:
            for x in cols:
                f.write("| %s | `%s` | %s | `%s` | `%s` |\n" % (d["table"], d["row"], x["column"], show(x["upstream"]), show(x["udnkit"])))
        f.write("\n## Explained\n\n")
        for d, cols, why in expl:
            f.write("- %s `%s`: %s (%s)\n" % (d["table"], d["row"], ", ".join(x["column"] for x in cols), "; ".join(sorted(set(why)))))
        f.write("\n## Rows only one side has\n\n")
        for d, why in only:
            f.write("- %s%s %s `%s`%s\n" % ("" if why else "**real** ", d["kind"], d["table"], d["row"], " (%s)" % why if why else ""))
    return c


def main(argv):
    if argv[1:] == ["--table-header"]:
        print(HEADER)
        print("|---" + "|---:" * 12 + "|")
        return
    case, compare_py, casedir = argv[2], argv[4], argv[5]
    up_nb, ud_nb = one(os.path.join(casedir, "up*-nb.json")), os.path.join(casedir, "ud-nb.json")
    up_api, ud_api = one(os.path.join(casedir, "up*-api.yaml")), os.path.join(casedir, "ud-api.yaml")
    norm = os.path.join(casedir, "norm")
    os.makedirs(norm, exist_ok=True)
    for src, api, dst in ((up_nb, up_api, "up-nb.json"), (ud_nb, ud_api, "ud-nb.json")):
        dump = json.load(open(src))
        dump["tables"] = normalise(dump["tables"], node_subnets(api))
        json.dump(dump, open(os.path.join(norm, dst), "w"))
    cmp_dir = os.path.join(casedir, "compare-norm")
    subprocess.run([sys.executable, compare_py, os.path.join(norm, "up-nb.json"), os.path.join(norm, "ud-nb.json"), cmp_dir],
                   check=True, stdout=subprocess.DEVNULL)
    raw, nt = raw_counts(casedir), totals(os.path.join(cmp_dir, "summary.md"))
    c = classify(json.load(open(os.path.join(cmp_dir, "diff.json"))), os.path.join(casedir, "real.md"))
    print("| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | **%d** | %d | %d |" % (
        case, raw["equal"] + raw["diff"] + raw["only_up"], raw["equal"], raw["keys"], raw["diff"] - raw["keys"],
        raw["only_up"], raw["only_ud"], nt["equal"], c["keys"], c["explained"], c["real"], c["only_up"], c["only_ud"]))


if __name__ == "__main__":
    main(sys.argv)
