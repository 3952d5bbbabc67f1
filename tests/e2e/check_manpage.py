#!/usr/bin/env python3
"""Checks the man page against the tool's own word (tests/e2e/manpage.bats): its text rendered
one paragraph a line (MANWIDTH=2000, leading blanks cut), against --help and the sources.

  options HELP PAGE   every option of --help (HELP: a label at column 2, its help from column 27
      on, continued there; 30 at least) is in the page's OPTIONS with the same help text, and
      the page has no option --help lacks
  sections DIR   the page's OPTIONS sections say which subcommands take their options (Tracing
      and Fleet mode none, check, merge and report theirs, All subcommands all; an entry's
      "Also for ..." adds some), as each subcommand's --help does (DIR/help-SUB, its options
      one a line) for 40 options at least; no entry repeats its section's word ("Taken by"),
      none says "Also for tracing"
  environment PAGE ROOT   ENVIRONMENT has an entry (its name alone on a line, a description on
      the next) for every SPYRE_ switch the user guide documents or user/*/*.c reads
      (getenv, env_is_1), bar the test knobs (SPYRE_TEST_*), named only in the one paragraph for
      the project's tests; nothing listed that the tool does not read

Exit 0 when all holds, else 1 with the first promise broken and its data.
"""
import argparse
import glob
import re

from checklib import need

SUBS = ["list", "check", "recover", "merge", "report"]


def section(page, start, end):
    need(start in page and end in page, "no %s or %s section" % (start, end))
    return page[page.index(start) + 1:page.index(end)]


def options(a):
    help_lines = open(a.help).read().split("\n")
    opts = section(open(a.page).read().split("\n"), "OPTIONS", "PROBE TABLE FORMAT")
    # --help's options: a label at column 2, its help from column 27 on, continued there
    entries, cur = [], None
    for l in help_lines:
        m = re.match(r"^  (-\S.*?|    --\S.*?)  +(\S.*)$", l)
        if m and not l.startswith("   " * 9):
            cur = [m.group(1).strip(), m.group(2)]
            entries.append(cur)
        elif cur and l.startswith(" " * 27) and l.strip():
            cur[1] += " " + l.strip()
        else:
            cur = None
    need(len(entries) >= 30, "options in --help, want 30 at least", len(entries))
    bad = []
    for label, text in entries:
        names = re.findall(r"--[a-z-]+", label)
        i = next((k for k, l in enumerate(opts) if all(n in l for n in names) and
                  l.startswith("-")), None)
        if i is None or i + 1 >= len(opts) or opts[i + 1] != text:
            bad.append((label, text, opts[i + 1] if i is not None and i + 1 < len(opts)
                        else None))
    help_names = {n for l, _ in entries for n in re.findall(r"--[a-z-]+", l)}
    page_names = {n for l in opts if l.startswith("-") for n in re.findall(r"--[a-z-]+", l)}
    need(not bad, "options whose help the page says otherwise, or not at all", bad)
    need(help_names == page_names, "options of one and not the other", help_names ^ page_names)


def sections(a):
    d = a.dir
    opts = section(open(d + "/wide.txt").read().split("\n"), "OPTIONS", "PROBE TABLE FORMAT")
    helps = {s: set(open("%s/help-%s" % (d, s)).read().split()) for s in SUBS}
    # who takes a section's options, as its opening paragraph says
    takers = {"Tracing": set(), "Fleet mode": set(), "check": {"check"}, "merge": {"merge"},
              "report": {"report"}, "All subcommands": set(SUBS)}
    takes, cur, entry = {}, None, None
    for l in opts:
        if l in takers:
            cur, entry = l, None
        elif l.startswith("-") and cur:
            entry = re.findall(r"(?<![a-z])--?[a-zA-Z][a-z-]*", l)
            for n in entry:
                takes[n] = set(takers[cur])
        elif entry and l.startswith("Also for "):
            for n in entry:
                takes[n] |= set(re.findall(r"[a-z]+", l[len("Also for "):]))
        elif not l:
            entry = None
    # no entry repeats what its section's paragraph says
    need(not any(l.startswith("Taken by") for l in opts), "a Taken by line")
    for l in opts:
        if l.startswith("Also for "):
            need("tracing" not in l, "an Also for tracing", l)
    need(len(takes) >= 40, "options placed, want 40 at least", sorted(takes))
    bad = [(n, s) for n in takes for s in SUBS if (s in takes[n]) != (n in helps[s])]
    need(not bad, "options the page and a subcommand's --help place apart", bad)


def environment(a):
    page = open(a.page).read().split("\n")
    env = section(page, "ENVIRONMENT", "EXAMPLES")
    # an entry is a line holding its name alone, its one-line description on the next line
    entries = {l: env[i + 1] for i, l in enumerate(env[:-1])
               if re.fullmatch(r"SPYRE_[A-Z_]+", l)}
    tests = [l for l in env if l.startswith("For the project's tests only")]
    need(len(tests) == 1, "the tests' paragraph, want one", tests)
    guide = set(re.findall(r"SPYRE_[A-Z_]+", open(a.root + "/docs/user-guide.md").read()))
    read = set()
    for f in glob.glob(a.root + "/user/*/*.c"):
        read |= set(re.findall(r'(?:env_is_1|getenv)\("(SPYRE_[A-Z_]+)"', open(f).read()))
    need("SPYRE_NO_TAIL_FOLLOW" in guide and "SPYRE_NO_UPROBE_MULTI" in read,
         "the guide's or the sources' switches not found", sorted(guide), sorted(read))
    bad = []
    for v in sorted(guide | read):
        if v.startswith("SPYRE_TEST_"):
            # a test's fault injection: named in the tests' paragraph, never as a user's switch
            if v in entries or v not in tests[0]:
                bad.append(v + ": not in the tests' paragraph alone")
        elif not entries.get(v, "").strip():
            bad.append(v + ": no entry with a description")
    need(not bad, "switches", bad)
    # and nothing listed that the tool does not read
    need(set(entries) <= read, "entries the tool does not read", set(entries) - read)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("options")
    c.add_argument("help")
    c.add_argument("page")
    c.set_defaults(fn=options)
    c = sub.add_parser("sections")
    c.add_argument("dir")
    c.set_defaults(fn=sections)
    c = sub.add_parser("environment")
    c.add_argument("page")
    c.add_argument("root")
    c.set_defaults(fn=environment)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
