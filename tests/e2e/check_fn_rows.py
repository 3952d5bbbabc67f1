#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""check_fn_rows.py TRACE SUMMARY REPORT_JSON REPORT_TEXT

A function's calls are one model (user/output/facts.c, struct fn_row) that the run's summary
table, the trace's spyreProbes and `report`'s host rows all render. For every probe of TRACE
with calls that returned (spyreProbes[].count and totalNs):
  - report --json's host row of that name has the same count and totalNs, to the nanosecond
    (the trace's durations are exact in ns), and p50Ns/p99Ns within 2 % or 64 ns (exact there,
    from a log-linear histogram in the live run: within ~1.6 %);
  - the summary's table (SUMMARY: the tracer's stderr) and report's text table print the same
    count, total ms and mean µs columns for it.
At least 10 such probes. Exit 0 when all hold, else a message."""
import json
import re
import sys

ROW = re.compile(r"^ +([0-9,]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+)  (.+)$")


def table(path):
    """The rows under each "... p99 µs  function" head: name -> its five columns."""
    out, on = {}, False
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        m = ROW.match(line)
        if line.endswith("p99 µs  function"):
            on = True
        elif on and m:
            out[m.group(6)] = m.groups()[:5]
        else:
            on = False
    return out


def main():
    trace, summary_path, rjson, rtext = sys.argv[1:5]
    t = json.load(open(trace))
    host = {x["name"]: x for x in json.load(open(rjson))["files"][0]["host"]}
    summary, report = table(summary_path), table(rtext)
    bad, n = [], 0
    for p in t["spyreProbes"]:
        if not p.get("count") or "totalNs" not in p:
            continue
        name, h = p["name"], host.get(p["name"])
        if h is None:
            bad.append("%s: no host row in the report" % name)
            continue
        if (p["count"], p["totalNs"]) != (h["count"], h["totalNs"]):
            bad.append("%s: count, totalNs %s in spyreProbes, %s in the report" %
                       (name, (p["count"], p["totalNs"]), (h["count"], h["totalNs"])))
        for q in ("p50Ns", "p99Ns"):
            if abs(p[q] - h[q]) > max(0.02 * h[q], 64):
                bad.append("%s: %s %s in spyreProbes, %s in the report" % (name, q, p[q], h[q]))
        s, r = summary.get(name), report.get(name)
        if not s or not r or s[:3] != r[:3]:
            bad.append("%s: the summary's row %s, the report's %s" % (name, s, r))
        n += 1
    if n < 10:
        bad.append("only %d probes with calls" % n)
    sys.exit("; ".join(bad) if bad else 0)


if __name__ == "__main__":
    main()
