#!/usr/bin/env bats
# spyre-bpftrace(8), the per-subcommand help and the bash completion: all three come from the
# option table of user/cmd/env.c, and these tests hold them to each other and to what the
# subcommands take (docs/user-guide.md, Options).

load helpers

PAGE_IN=$ROOT/docs/spyre-bpftrace.8.in

setup() {
	sh "$ROOT/tools/gen-man.sh" "$TOOL" "$PAGE_IN" 2026-01-01 > "$BATS_TEST_TMPDIR/page.8"
}

# opts CMD...: the option names a --help shows, one per line, sorted
opts() {
	"$TOOL" "$@" --help | grep -oE '^ +(-[a-zA-Z], )?--[a-z-]+(, --[a-z-]+)?' | tr ', ' '\n\n' |
		grep . | sort
}

@test "the man page renders without a warning and has the sections users expect" {
	run sh -c "MANWIDTH=80 man --warnings -l '$BATS_TEST_TMPDIR/page.8' 2>&1 >/dev/null"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	MANWIDTH=80 man -l "$BATS_TEST_TMPDIR/page.8" > "$BATS_TEST_TMPDIR/page.txt"
	for s in NAME SYNOPSIS DESCRIPTION OPTIONS "PROBE TABLE FORMAT" "EXIT STATUS" FILES \
		 ENVIRONMENT EXAMPLES "SEE ALSO"; do
		grep -qx "$s" "$BATS_TEST_TMPDIR/page.txt" || { echo "no section $s"; false; }
	done
	# nothing wider than the terminal it was rendered for
	[ -z "$(awk 'length > 80' "$BATS_TEST_TMPDIR/page.txt")" ]
	# the version is the tool's
	grep -q "spyre-bpftrace $("$TOOL" --version | cut -d' ' -f2)" "$BATS_TEST_TMPDIR/page.txt"
}

@test "every option of --help is in the man page with the same help text, and no other" {
	# one paragraph per line: the page says each option's help unbroken
	MANWIDTH=2000 man -l "$BATS_TEST_TMPDIR/page.8" 2>/dev/null | sed 's/^ *//' \
		> "$BATS_TEST_TMPDIR/wide.txt"
	"$TOOL" --help > "$BATS_TEST_TMPDIR/help.txt"
	python3 - "$BATS_TEST_TMPDIR/help.txt" "$BATS_TEST_TMPDIR/wide.txt" <<'PY'
import re, sys
help_lines = open(sys.argv[1]).read().split("\n")
page = open(sys.argv[2]).read().split("\n")
opts = page[page.index("OPTIONS") + 1:page.index("PROBE TABLE FORMAT")]
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
assert len(entries) >= 30, entries
bad = []
for label, text in entries:
    names = re.findall(r"--[a-z-]+", label)
    i = next((k for k, l in enumerate(opts) if all(n in l for n in names) and
              l.startswith("-")), None)
    if i is None or opts[i + 1] != text:
        bad.append((label, text, opts[i + 1] if i is not None else None))
help_names = {n for l, _ in entries for n in re.findall(r"--[a-z-]+", l)}
page_names = {n for l in opts if l.startswith("-") for n in re.findall(r"--[a-z-]+", l)}
assert not bad, bad
assert help_names == page_names, (help_names ^ page_names)
PY
}

@test "the man page says which subcommands take each option as their --help does, once per section" {
	MANWIDTH=2000 man -l "$BATS_TEST_TMPDIR/page.8" 2>/dev/null | sed 's/^ *//' \
		> "$BATS_TEST_TMPDIR/wide.txt"
	for sub in list check recover merge report; do
		opts "$sub" > "$BATS_TEST_TMPDIR/help-$sub"
	done
	python3 - "$BATS_TEST_TMPDIR" <<'PY'
import re, sys
d = sys.argv[1]
page = open(d + "/wide.txt").read().split("\n")
opts = page[page.index("OPTIONS") + 1:page.index("PROBE TABLE FORMAT")]
subs = ["list", "check", "recover", "merge", "report"]
helps = {s: set(open("%s/help-%s" % (d, s)).read().split()) for s in subs}
# who takes a section's options, as its opening paragraph says
section = {"Tracing": set(), "Fleet mode": set(), "check": {"check"}, "merge": {"merge"},
           "report": {"report"}, "All subcommands": set(subs)}
takes, cur, entry = {}, None, None
for l in opts:
    if l in section:
        cur, entry = l, None
    elif l.startswith("-") and cur:
        entry = re.findall(r"(?<![a-z])--?[a-zA-Z][a-z-]*", l)
        for n in entry:
            takes[n] = set(section[cur])
    elif entry and l.startswith("Also for "):
        for n in entry:
            takes[n] |= set(re.findall(r"[a-z]+", l[len("Also for "):]))
    elif not l:
        entry = None
# no entry repeats what its section's paragraph says
assert not any(l.startswith("Taken by") for l in opts), "a Taken by line"
for l in opts:
    if l.startswith("Also for "):
        assert "tracing" not in l, l
assert len(takes) >= 40, sorted(takes)
bad = [(n, s) for n in takes for s in subs if (s in takes[n]) != (n in helps[s])]
assert not bad, bad
PY
}

@test "each subcommand's help shows its own options and the general ones, the man synopsis the same" {
	general="-V
-h
-v
--help
--verbose
--version"
	want_list="-p --pid --probe --probes --no-default --max-probes --allow-missing --uretprobes"
	want_merge="-o --output --force --profiler-start --nest-tolerance"
	[ "$(opts list)" = "$(printf '%s\n' $want_list $general | sort)" ]
	[ "$(opts merge)" = "$(printf '%s\n' $want_merge $general | sort)" ]
	[ "$(opts check)" = "$(printf '%s\n' --json $general | sort)" ]
	[ "$(opts recover)" = "$(printf '%s\n' -o --output --force $general | sort)" ]
	[ "$(opts report)" = "$(printf '%s\n' --json --by-thread $general | sort)" ]
	# the tracer's own help still shows everything, merge's options among them
	opts | grep -qx -- --nest-tolerance
	opts | grep -qx -- --window
	# each usage line names its subcommand
	"$TOOL" list --help | head -1 | grep -q '^usage: spyre-bpftrace list \[-p PID\] \[GLOB\]'
	[ "$("$TOOL" check --help | grep -c '^ *usage:\|^       spyre-bpftrace')" -eq 1 ]
	# the synopsis of a subcommand brackets the same long options its help shows
	MANWIDTH=2000 man -l "$BATS_TEST_TMPDIR/page.8" 2>/dev/null > "$BATS_TEST_TMPDIR/wide.txt"
	for sub in list check recover merge report; do
		syn=$(grep -m1 "^ *spyre-bpftrace $sub " "$BATS_TEST_TMPDIR/wide.txt" |
			grep -oE '\[--?[a-zA-Z-]+' | tr -d '[' | sort)
		# the man synopsis has short names where there are; the fixed words (merge's -o OUT)
		# are outside the brackets; list's -p is optional, bracketed
		fixed=NONE
		[ "$sub" = merge ] && fixed=-o
		help=$("$TOOL" $sub --help | grep -oE '^ +(-[a-zA-Z]|    --[a-z-]+)' | tr -d ' ' |
			grep -vx -- "$fixed" | sort)
		[ "$syn" = "$help" ] || { echo "$sub: synopsis '$syn' help '$help'"; false; }
	done
}

@test "ENVIRONMENT lists every SPYRE_ switch the user guide documents and the tool reads; test knobs apart" {
	MANWIDTH=2000 man -l "$BATS_TEST_TMPDIR/page.8" 2>/dev/null | sed 's/^ *//' \
		> "$BATS_TEST_TMPDIR/wide.txt"
	python3 - "$BATS_TEST_TMPDIR/wide.txt" "$ROOT" <<'PY'
import glob, re, sys
page = open(sys.argv[1]).read().split("\n")
env = page[page.index("ENVIRONMENT") + 1:page.index("EXAMPLES")]
# an entry is a line holding its name alone, its one-line description on the next line
entries = {l: env[i + 1] for i, l in enumerate(env[:-1]) if re.fullmatch(r"SPYRE_[A-Z_]+", l)}
tests = [l for l in env if l.startswith("For the project's tests only")]
assert len(tests) == 1, tests
guide = set(re.findall(r"SPYRE_[A-Z_]+", open(sys.argv[2] + "/docs/user-guide.md").read()))
read = set()
for f in glob.glob(sys.argv[2] + "/user/*/*.c"):
    read |= set(re.findall(r'(?:env_is_1|getenv)\("(SPYRE_[A-Z_]+)"', open(f).read()))
assert "SPYRE_NO_TAIL_FOLLOW" in guide and "SPYRE_NO_UPROBE_MULTI" in read, (guide, read)
bad = []
for v in sorted(guide | read):
    if v.startswith("SPYRE_TEST_"):
        # a test's fault injection: named in the tests' paragraph, never as a user's switch
        if v in entries or v not in tests[0]:
            bad.append(v + ": not in the tests' paragraph alone")
    elif not entries.get(v, "").strip():
        bad.append(v + ": no entry with a description")
assert not bad, bad
# and nothing listed that the tool does not read
assert set(entries) <= read, set(entries) - read
PY
}

# complete WORD...: what the completion offers for the last WORD, sorted, one a line; in an
# empty directory (file names are offered too)
complete_words() {
	mkdir -p "$BATS_TEST_TMPDIR/empty"
	cd "$BATS_TEST_TMPDIR/empty"
	bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _spyre_bpftrace
		printf "%s\n" "${COMPREPLY[@]}" | sort' _ "$ROOT/tools/completion/spyre-bpftrace" "$@"
}

@test "bash completion offers the subcommands, a subcommand's options, the built-in tables and PIDs" {
	[ "$(complete_words "$TOOL" "")" = "$(printf '%s\n' check list merge recover report)" ]
	[ "$(complete_words "$TOOL" li)" = list ]
	[ "$(complete_words "$TOOL" check --)" = \
	  "$(printf '%s\n' --help --json --verbose --version)" ]
	[ "$(complete_words "$TOOL" merge --n)" = --nest-tolerance ]
	complete_words "$TOOL" --no | grep -qx -- --no-status
	# list refuses fleet options: it is not offered them
	! complete_words "$TOOL" list --w | grep -q .
	[ "$(complete_words "$TOOL" --probes t)" = torch ]
	complete_words "$TOOL" list --probes "" | grep -qx spyre
	# a PID: this test's own
	complete_words "$TOOL" -p "$$" | grep -qx "$$"
	complete_words "$TOOL" list -p "" | grep -qx 1
	# after -- the launched command's words are its own
	[ -z "$(complete_words "$TOOL" -- ls --)" ]
}

@test "make install puts the man page and the bash completion beside the tool and the tables" {
	make -s -C "$ROOT" BUILD="$BUILD" DESTDIR="$BATS_TEST_TMPDIR/root" PREFIX=/usr install
	r=$BATS_TEST_TMPDIR/root/usr
	[ -x "$r/sbin/spyre-bpftrace" ]
	[ -s "$r/share/spyre-bpftrace/spyre-default.probes" ]
	[ -s "$r/share/spyre-bpftrace/torch.probes" ]
	MANWIDTH=80 man -l "$r/share/man/man8/spyre-bpftrace.8" | grep -qx 'SYNOPSIS'
	cmp "$r/share/bash-completion/completions/spyre-bpftrace" "$ROOT/tools/completion/spyre-bpftrace"
}
