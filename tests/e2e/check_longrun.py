#!/usr/bin/env python3
"""Checks what a long run leaves (tests/e2e/longrun.bats): the status line as a terminal got
it, and the flight recorder's files.

  status-draws RAW   the bytes an 80-column terminal received (tmux pipe-pane): 3 redraws of the
      status line at least, each fitting 79 columns, each clearing what a longer one left
      (ESC [K), none breaking the line
  flight TRACE   a --flight-recorder 1s dump: spyreFile says the recorder's 1 s, it reaches no
      further back than that and a slice (1.25 s, 0.1 s of slack), holds events, a kernel span
      among them

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse

from checklib import load, need


def status_draws(a):
    raw = open(a.raw, "rb").read().decode("utf-8", "replace")
    draws = [d for d in raw.split("\r") if "ev/s" in d]
    need(len(draws) >= 3, "redraws, want 3 at least", draws)
    for d in draws:
        line = d.split("\x1b[K")[0]
        need(len(line) <= 79, "a redraw wider than 79 columns: it wraps at 80", len(line), line)
        need(d.count("\x1b[K") >= 1, "a redraw that does not clear what a longer one left", d)
        need("\n" not in line, "a redraw breaking the line", line)


def flight(a):
    d = load(a.trace)
    f = d["spyreFile"]
    need(f.get("flightRecorderUs") == 1e6, "flightRecorderUs, want 1 s", f)
    need(f["endUs"] - f["startUs"] <= 1.25e6 + 1e5, "the dump reaches back over 1.25 s", f)
    need(f["events"] > 0, "no event", f)
    need(any(e.get("ph") == "X" and e.get("cat") == "kernel" for e in d["traceEvents"]),
         "no kernel span")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("status-draws")
    c.add_argument("raw")
    c.set_defaults(fn=status_draws)
    c = sub.add_parser("flight")
    c.add_argument("trace")
    c.set_defaults(fn=flight)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
