"""timing.py: reads `ovsdb-client --timestamp monitor ALL` output.

  timing.py sample MONITOR_FILE T0   -> seconds from T0 to the last update
                                        (NB_Global aside), rows inserted, deleted
  timing.py table SAMPLES_TSV       -> a Markdown table of medians per kind
"""
import datetime
import re
import statistics
import sys

STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})$")
IGNORED = {"NB_Global", "Connection", "SSL"}
# GOAL bounds udnkit's time over upstream's: "≤ 0.5× upstream's time for the
# whole network".
GOAL = 0.5


def sample(path, t0):
    last, ins, dels = None, 0, 0
    stamp, table, rows = None, None, False
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        m = STAMP.match(line)
        if m:
            stamp = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f").replace(
                tzinfo=datetime.timezone.utc).timestamp()
            table, rows = None, False
            continue
        if stamp is None:
            continue
        if table is None:
            table = line.strip()
            continue
        if line.startswith("---"):
            rows = True
            continue
        if not rows or stamp < t0 or table in IGNORED:
            continue
        f = line.split()
        if len(f) >= 2 and f[1] in ("insert", "delete"):
            ins += f[1] == "insert"
            dels += f[1] == "delete"
            last = stamp
        elif len(f) >= 2 and f[1] in ("old", "new"):
            last = stamp
        elif len(f) >= 1 and f[0] == "new":
            last = stamp
    secs = "" if last is None else "%.3f" % (last - t0)
    print(f"{secs}\t{ins}\t{dels}")


def table(path):
    data = {}
    for line in open(path):
        label, side, secs, ins, dels = line.rstrip("\n").split("\t")
        kind = label.rsplit("-", 1)[0]
        d = data.setdefault(kind, {}).setdefault(side, {"s": [], "rows": []})
        if secs:
            d["s"].append(float(secs))
        d["rows"].append(int(ins) if kind.startswith("create") else int(dels))
    print("| operation | samples | upstream s (median, range) | udnkit s (median, range) | udnkit / upstream "
          f"| goal ≤ {GOAL}× | rows upstream | rows udnkit |")
    print("|---|---:|---|---|---:|---|---:|---:|")
    for kind in data:
        up, ud = data[kind].get("up"), data[kind].get("ud")
        if not up or not ud or not up["s"] or not ud["s"]:
            print(f"| {kind} | | (no update seen) | | | | | |")
            continue
        mu, md = statistics.median(up["s"]), statistics.median(ud["s"])
        met = "✓ met" if md / mu <= GOAL else "✗ missed"
        print(f"| {kind} | {len(ud['s'])} | {mu:.3f} ({min(up['s']):.3f}–{max(up['s']):.3f}) | "
              f"{md:.3f} ({min(ud['s']):.3f}–{max(ud['s']):.3f}) | {md / mu:.2f}× | {met} | "
              f"{statistics.median(up['rows']):.0f} | {statistics.median(ud['rows']):.0f} |")


if __name__ == "__main__":
    if sys.argv[1] == "sample":
        sample(sys.argv[2], float(sys.argv[3]))
    else:
        table(sys.argv[2])
