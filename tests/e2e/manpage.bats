#!/usr/bin/env bats
# spyre-bpftrace(8), the per-subcommand help and the bash completion: all three come from the
# option table of user/cmd/env.c, and these tests hold them to each other and to what the
# subcommands take (docs/user-guide.md, Options).

load helpers

CHECK_MAN="python3 $ROOT/tests/e2e/check_manpage.py"

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
	$CHECK_MAN options "$BATS_TEST_TMPDIR/help.txt" "$BATS_TEST_TMPDIR/wide.txt"
}

@test "the man page says which subcommands take each option as their --help does, once per section" {
	MANWIDTH=2000 man -l "$BATS_TEST_TMPDIR/page.8" 2>/dev/null | sed 's/^ *//' \
		> "$BATS_TEST_TMPDIR/wide.txt"
	for sub in list check recover merge report; do
		opts "$sub" > "$BATS_TEST_TMPDIR/help-$sub"
	done
	$CHECK_MAN sections "$BATS_TEST_TMPDIR"
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
	$CHECK_MAN environment "$BATS_TEST_TMPDIR/wide.txt" "$ROOT"
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
