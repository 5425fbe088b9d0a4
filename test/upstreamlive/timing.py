"""timing.py: reads `ovsdb-client --timestamp monitor ALL` output.

  timing.py watch KUBECONFIG OUT     -> writes each UserDefinedNetwork watch
                                        event to OUT, after its arrival time
                                        (seconds since the epoch), until killed
  timing.py first WATCH_FILE T0      -> the first event's time at or after T0
                                        (T0 when there is none)
  timing.py lastfirst WATCH_FILE T0  -> the latest of each UDN's first event
                                        at or after T0: when the last of a
                                        bulk's UDNs was announced
  timing.py sample MONITOR_FILE T0 [T0CMD [T0LAST]]
                                     -> seconds from T0 to the last update
                                        (NB_Global aside), rows inserted,
                                        deleted, seconds from T0CMD and
                                        from T0LAST
  timing.py table SAMPLES_TSV       -> a Markdown table of medians per kind
"""
import datetime
import re
import signal
import statistics
import subprocess
import sys
import time

STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})$")
IGNORED = {"NB_Global", "Connection", "SSL"}
# What ovn-northd writes back into Northbound rows (the ports' up and
# hosting chassis).
NORTHD_COLUMNS = {"up", "status"}
# GOAL bounds udnkit's time over upstream's: "≤ 0.5× upstream's time for the
# whole network".
GOAL = 0.5


def watch(kubeconfig, out):
    """Timestamps each UDN watch event as it arrives: a sample's clock
    starts when its apiserver announced the UDN's creation (or deletion),
    not when kubectl started, whose start-up both sides pay alike."""
    p = subprocess.Popen(["kubectl", "--kubeconfig", kubeconfig, "get", "userdefinednetworks", "-A",
                          "--watch-only", "--output-watch-events", "--no-headers",
                          "-o", "custom-columns=EVENT:.type,NS:.object.metadata.namespace,NAME:.object.metadata.name,DELETING:.object.metadata.deletionTimestamp"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
    signal.signal(signal.SIGTERM, lambda *_: (p.terminate(), sys.exit(0)))
    with open(out, "w", buffering=1) as f:
        for line in p.stdout:
            f.write(f"{time.time():.6f} {line}")


def first(path, t0):
    for line in open(path):
        stamp = float(line.split(" ", 1)[0])
        if stamp >= t0:
            print(f"{stamp:.6f}")
            return
    print(f"{t0:.6f}")


def lastfirst(path, t0):
    """A bulk's controllers work from each UDN's announcement on; the last
    one's is when the client (kubectl, creating one object after another)
    is done, so the time after it is what the controllers add."""
    seen = {}
    for line in open(path):
        f = line.split()
        if len(f) >= 4 and float(f[0]) >= t0:
            seen.setdefault((f[2], f[3]), float(f[0]))
    print(f"{max(seen.values(), default=t0):.6f}")


def sample(path, t0, t0cmd=None, t0last=None):
    """A side's time is to its last update of a row a controller writes:
    an update that changes only what ovn-northd writes back into the
    Northbound (NORTHD_COLUMNS) is ovn-northd's work after the last write,
    the same for both sides, and does not count."""
    last, ins, dels = None, 0, 0
    stamp, table, header, spans, rows, skip_new = None, None, None, None, False, False
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        m = STAMP.match(line)
        if m:
            stamp = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").replace(
                tzinfo=datetime.timezone.utc).timestamp()
            table, header, rows = None, None, False
            continue
        if stamp is None:
            continue
        if table is None:
            table = line.strip()
            continue
        if line.startswith("---"):
            spans = [(m.start(), m.end()) for m in re.finditer(r"-+", line)]
            rows = True
            continue
        if not rows:
            header = line
            continue
        if stamp < t0 or table in IGNORED:
            continue
        f = line.split()
        if len(f) >= 2 and f[1] in ("insert", "delete"):
            ins += f[1] == "insert"
            dels += f[1] == "delete"
            last = stamp
        elif len(f) >= 2 and f[1] == "old":
            skip_new = changed(header, spans, line) <= NORTHD_COLUMNS
            if not skip_new:
                last = stamp
        elif len(f) >= 1 and f[0] == "new":
            if not skip_new:
                last = stamp
            skip_new = False
    secs = "" if last is None else "%.3f" % (last - t0)
    cmd = "" if last is None or t0cmd is None else "%.3f" % (last - t0cmd)
    after = "" if last is None or t0last is None else "%.3f" % (last - t0last)
    print(f"{secs}\t{ins}\t{dels}\t{cmd}\t{after}")


def changed(header, spans, old):
    """The columns an update's "old" line shows: those it changed."""
    out = set()
    for start, end in spans[2:]:  # row UUID and action aside
        name = header[start:end].strip()
        if name != "_version" and old[start:end].strip():
            out.add(name)
    return out


def table(path):
    data = {}
    for line in open(path):
        label, side, secs, ins, dels, *rest = line.rstrip("\n").split("\t")
        kind = label.rsplit("-", 1)[0]
        d = data.setdefault(kind, {}).setdefault(side, {"s": [], "rows": [], "cmd": [], "after": []})
        if secs:
            d["s"].append(float(secs))
        if rest and rest[0]:
            d["cmd"].append(float(rest[0]))
        if len(rest) > 1 and rest[1]:
            d["after"].append(float(rest[1]))
        d["rows"].append(int(ins) if kind.startswith("create") else int(dels))
    print("| operation | samples | upstream s (median, range) | udnkit s (median, range) | udnkit / upstream "
          f"| goal ≤ {GOAL}× | rows upstream | rows udnkit | from kubectl's start: upstream / udnkit s (ratio) "
          "| after the last UDN's announcement: upstream / udnkit s (ratio) |")
    print("|---|---:|---|---|---:|---|---:|---:|---|---|")
    for kind in data:
        up, ud = data[kind].get("up"), data[kind].get("ud")
        if not up or not ud or not up["s"] or not ud["s"]:
            print(f"| {kind} | | (no update seen) | | | | | | | |")
            continue
        mu, md = statistics.median(up["s"]), statistics.median(ud["s"])
        met = "✓ met" if md / mu <= GOAL else "✗ missed"
        print(f"| {kind} | {len(ud['s'])} | {mu:.3f} ({min(up['s']):.3f}–{max(up['s']):.3f}) | "
              f"{md:.3f} ({min(ud['s']):.3f}–{max(ud['s']):.3f}) | {md / mu:.2f}× | {met} | "
              f"{statistics.median(up['rows']):.0f} | {statistics.median(ud['rows']):.0f} | {pair(up, ud, 'cmd')} "
              f"| {pair(up, ud, 'after')} |")


def pair(up, ud, key):
    """The two sides' medians of one more clock, and their ratio."""
    if not up[key] or not ud[key]:
        return ""
    mu, md = statistics.median(up[key]), statistics.median(ud[key])
    return f"{mu:.3f} / {md:.3f} ({md / mu:.2f}×)"


if __name__ == "__main__":
    if sys.argv[1] == "watch":
        watch(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "first":
        first(sys.argv[2], float(sys.argv[3]))
    elif sys.argv[1] == "lastfirst":
        lastfirst(sys.argv[2], float(sys.argv[3]))
    elif sys.argv[1] == "sample":
        sample(sys.argv[2], float(sys.argv[3]), *[float(a) for a in sys.argv[4:6]])
    else:
        table(sys.argv[2])
