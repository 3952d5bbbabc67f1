// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The command line's renderings from its one table (options.h): the help (--help, and after a
 * subcommand that subcommand's options only), the usage lines, and the man page's generated
 * parts (tools/gen-man.sh puts them into docs/spyre-bpftrace.8.in).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "cmd/usage.h"
#include "common/exitcodes.h"
#include "resolve/probes.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static const char *const section_titles[] = {
	[SEC_TRACE] = NULL,	/* right after the usage lines */
	[SEC_FLEET] = "fleet mode (docs/fleet.md):",
	[SEC_CHECK] = "check (docs/check-recover.md):",
	[SEC_MERGE] = "merge (docs/user-guide.md, Merging):",
	[SEC_REPORT] = "report (docs/user-guide.md, Tables without a browser):",
	[SEC_GENERAL] = "all subcommands:",
};

/* The help's second column; the width of the list of each subcommand's options */
#define HELP_COL	27
#define SUB_COL		11
#define SUB_WIDTH	95
/* "-p, --pid PID": the help's left column */
static void opt_label(const struct opt_def *d, char *buf, size_t len)
{
	if (d->label)
		snprintf(buf, len, "%s%s", d->key < 256 ? "" : "    ", d->label);
	else if (d->key < 256)
		snprintf(buf, len, "-%c, --%s%s%s", d->key, d->name, d->arg ? " " : "",
			 d->arg ? d->arg : "");
	else
		snprintf(buf, len, "    --%s%s%s", d->name, d->arg ? " " : "",
			 d->arg ? d->arg : "");
}

static void print_option(FILE *f, const struct opt_def *d)
{
	const char *h = d->help, *nl;
	char label[96];
	int n;

	opt_label(d, label, sizeof(label));
	n = fprintf(f, "  %s", label);
	/* a long label keeps two spaces before its help */
	fprintf(f, "%*s", n + 2 > HELP_COL ? 2 : HELP_COL - n, "");
	for (;;) {
		nl = strchr(h, '\n');
		if (!nl) {
			fprintf(f, "%s\n", h);
			return;
		}
		fprintf(f, "%.*s\n%*s", (int)(nl - h), h, HELP_COL, "");
		h = nl + 1;
	}
}

/* "list: -p --probe ...": what each subcommand takes, from the table */
static void print_subcommand_options(FILE *f)
{
	for (int c = CMD_LIST; c <= CMD_REPORT; c++) {
		int n = fprintf(f, "  %-*s", SUB_COL - 2, cmd_names[c]);

		for (size_t i = 0; i < opt_ndefs; i++) {
			const struct opt_def *d = &opt_defs[i];
			char name[48];

			if (!(d->cmds & (1u << c)) || d->section == SEC_GENERAL)
				continue;
			if (d->key < 256)
				snprintf(name, sizeof(name), "-%c", d->key);
			else
				snprintf(name, sizeof(name), "--%s", d->name);
			/* a new line, its column counted without the newline */
			if (n + 1 + (int)strlen(name) > SUB_WIDTH)
				n = fprintf(f, "\n%*s", SUB_COL, "") - 1;
			n += fprintf(f, " %s", name);
		}
		fprintf(f, "%s\n", n > SUB_COL ? "" : " (none)");
	}
}

/*
 * The ways to run the tool, for the help's usage lines and the man page's SYNOPSIS. @fixed is
 * what the form needs besides its options; the man page brackets every option @cmd takes
 * after the subcommand, minus those @fixed names (@given) and those the form refuses (@refuses:
 * FLEET_ONLY outside fleet mode, NOT_FLEET in it).
 */
struct usage_def {
	enum spyre_cmd cmd;
	const char *fixed;	/* after "spyre-bpftrace [SUBCOMMAND]" and its options */
	const char *help;	/* the help's usage line, after "spyre-bpftrace " */
	const char *what;
	unsigned int refuses;
	int given[2];
};

static const struct usage_def usage_defs[] = {
	{ CMD_TRACE, "-p PID", "[OPTIONS] -p PID", "trace a running Spyre job", FLEET_ONLY,
	  { 'p', 'a' } },
	{ CMD_TRACE, "-- CMD [ARGS...]", "[OPTIONS] -- CMD [ARGS...]",
	  "launch CMD and trace it from the start", FLEET_ONLY, { 'p', 'a' } },
	{ CMD_TRACE, "-a", "-a [OPTIONS]", "fleet mode: every job on the node (docs/fleet.md)",
	  NOT_FLEET, { 'a', 'p' } },
	{ CMD_LIST, "[GLOB]", "list [-p PID] [GLOB]", "the probes: those that resolve in PID, or "
	  "the tables and the Spyre processes", 0 },
	{ CMD_CHECK, "FILE|DIR...", "check [--json] FILE|DIR...",
	  "validate traces (overlaps, durations, flows)", 0 },
	{ CMD_RECOVER, "FILE", "recover FILE [-o OUT]", "close a trace cut short (tracer killed)",
	  0 },
	{ CMD_MERGE, "OURS KINETO -o OUT", "merge OURS KINETO -o OUT",
	  "add a PyTorch profiler trace, clocks aligned", 0, { 'o' } },
	{ CMD_REPORT, "FILE|DIR...", "report [--json] [--by-thread] FILE|DIR...",
	  "the trace's tables: host calls, kernels, device busy time, copies, health", 0 },
};

/* docs/user-guide.md, Exit codes, says more about each */
static const struct {
	int code;
	const char *what;
} exit_defs[] = {
	{ EXIT_OK, "ok (-- CMD: the job's own status when it failed, 128+N when signal N "
	  "killed it)" },
	{ EXIT_ERROR, "error" },
	{ EXIT_USAGE, "usage" },
	{ EXIT_NO_PID, "no such process" },
	{ EXIT_PERM, "not permitted (root needed)" },
	{ EXIT_NO_RUNTIME, "no Spyre runtime in target" },
	{ EXIT_NO_BTF, "kernel without BTF" },
	{ EXIT_OUTPUT, "output not writable" },
	{ EXIT_CHECK, "check found problems" },
	{ EXIT_TARGET_KILLED, "the traced process was killed by a signal" },
	{ EXIT_NO_MATCH,
	  "a --probe/--probes line resolves nowhere in the target (a typo?; with -- CMD: by the "
	  "job's end)" },
};

#define EXIT_WIDTH	92

static bool usage_given(const struct usage_def *u, int key)
{
	return u->given[0] == key || u->given[1] == key;
}

/* "list --help" shows @cmd's options; the tracer's own --help (CMD_TRACE) shows them all */
static bool help_shows(const struct opt_def *d, enum spyre_cmd cmd)
{
	return cmd == CMD_TRACE || (d->cmds & (1u << cmd));
}

void env_usage_cmd(FILE *f, enum spyre_cmd cmd)
{
	bool first = true, probes = false, own = false;
	int n, col = 0;

	/* the usage lines' second column: after the longest form shown, two spaces */
	for (size_t i = 0; i < ARRAY_SIZE(usage_defs); i++)
		if ((cmd == CMD_TRACE || usage_defs[i].cmd == cmd) &&
		    (int)strlen(usage_defs[i].help) + 2 > col)
			col = strlen(usage_defs[i].help) + 2;
	for (size_t i = 0; i < ARRAY_SIZE(usage_defs); i++) {
		const struct usage_def *u = &usage_defs[i];

		if (cmd != CMD_TRACE && u->cmd != cmd)
			continue;
		fprintf(f, "%s spyre-bpftrace %-*s%s\n", first ? "usage:" : "      ", col,
			u->help, u->what);
		first = false;
	}
	for (int s = SEC_TRACE; s <= SEC_GENERAL; s++) {
		bool title = false;

		for (size_t i = 0; i < opt_ndefs; i++) {
			const struct opt_def *d = &opt_defs[i];

			if ((int)d->section != s || !d->help || !help_shows(d, cmd))
				continue;
			/* a subcommand's own options are one block, untitled: they are all it has */
			if (!title && (cmd == CMD_TRACE || s == SEC_GENERAL || !own)) {
				fputc('\n', f);
				if (section_titles[s] && (cmd == CMD_TRACE || s == SEC_GENERAL))
					fprintf(f, "%s\n", section_titles[s]);
			}
			title = true;
			own |= s != SEC_GENERAL;
			print_option(f, d);
			probes |= d->key == OPT_PROBES;
		}
	}
	if (probes) {
		fputs("\nbuilt-in probe tables (--probes NAME):", f);
		for (size_t i = 0; probes_builtin_name(i); i++)
			fprintf(f, " %s", probes_builtin_name(i));
		fputc('\n', f);
	}
	if (cmd == CMD_TRACE) {
		fputs("\noptions of the subcommands (besides those for all; others are refused):\n",
		      f);
		print_subcommand_options(f);
	}
	n = fprintf(f, "\nexit codes:") - 1;
	for (size_t i = 0; i < ARRAY_SIZE(exit_defs); i++) {
		char item[256], *word, *save = NULL;
		int len = snprintf(item, sizeof(item), "%d %s%s", exit_defs[i].code,
				   exit_defs[i].what, i + 1 < ARRAY_SIZE(exit_defs) ? "," : "");
		const char *indent = "           ";	/* under the first code */

		/* an item on one line where it fits, else word by word, its rest indented */
		if (n + 1 + len > EXIT_WIDTH)
			n = fprintf(f, "\n%s", indent) - 1;
		for (word = strtok_r(item, " ", &save); word; word = strtok_r(NULL, " ", &save)) {
			if (n + 1 + (int)strlen(word) > EXIT_WIDTH)
				n = fprintf(f, "\n%s   ", indent) - 1;
			n += fprintf(f, " %s", word);
		}
	}
	fputc('\n', f);
}

void env_usage(FILE *f)
{
	env_usage_cmd(f, CMD_TRACE);
}

/* --- the man page's generated parts (tools/gen-man.sh puts them into docs/spyre-bpftrace.8.in) */

/* @s as roff text: '-' and '\' escaped, 'µ' named, a line start that would be a request guarded */
static void roff_text(FILE *f, const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", f);
	for (; *s; s++) {
		if (*s == '-')
			fputs("\\-", f);
		else if (*s == '\\')
			fputs("\\e", f);
		else if (!strncmp(s, "\xc2\xb5", 2) && s++)
			fputs("\\(mc", f);
		else if (*s == '\n')
			fputc(' ', f);	/* the help's line breaks: man fills its own lines */
		else
			fputc(*s, f);
	}
}

/*
 * "\fB\-p\fR, \fB\-\-pid\fR \fIPID\fR" (@both), "\fB\-\-probe\fR\ \fILIB:...\fR": @sep between
 * the option and its argument ("\ " in the synopsis: a bracket is not broken across lines)
 */
static void roff_opt(FILE *f, const struct opt_def *d, bool both, const char *sep)
{
	fputs("\\fB", f);
	if (d->key < 256) {
		fprintf(f, "\\-%c", d->key);
		if (both)
			fprintf(f, "\\fR, \\fB\\-\\-%s", d->name);
	} else {
		fputs("\\-\\-", f);
		roff_text(f, d->name);
	}
	fputs("\\fR", f);
	if (d->arg) {
		fprintf(f, "%s\\fI", sep);
		roff_text(f, d->arg);
		fputs("\\fR", f);
	}
}

static void man_synopsis(FILE *f)
{
	for (size_t i = 0; i < ARRAY_SIZE(usage_defs); i++) {
		const struct usage_def *u = &usage_defs[i];

		fputs(".SY spyre\\-bpftrace\n", f);
		if (u->cmd != CMD_TRACE)
			fprintf(f, ".B %s\n", cmd_names[u->cmd]);
		for (size_t j = 0; j < opt_ndefs; j++) {
			const struct opt_def *d = &opt_defs[j];

			if (!(d->cmds & (1u << u->cmd)) || (d->cmds & u->refuses) ||
			    usage_given(u, d->key))
				continue;
			/* quoted: .RB would join its words, the option's and its argument's */
			fputs(".RB [ \"", f);
			roff_opt(f, d, false, "\\ ");
			fputs("\" ]\n", f);
		}
		roff_text(f, u->fixed);
		fputs("\n.YS\n", f);
	}
}

/*
 * Who takes the options of a section is said once, in its opening paragraph; an option says
 * only how it differs (another subcommand takes it too, fleet mode only or never), so that the
 * page does not repeat "tracing" under thirty options.
 */
static const struct {
	const char *title;
	unsigned int cmds;	/* what every option of the section is for */
	const char *intro;	/* roff */
} man_sections[] = {
	[SEC_TRACE] = { "Tracing", FOR_TRACE,
		"Options of tracing (\\fB\\-p\\fR, \\fB\\-\\-\\fR \\fICMD\\fR, \\fB\\-a\\fR); "
		"those another subcommand takes too, or fleet mode refuses, say so." },
	[SEC_FLEET] = { "Fleet mode", FOR_TRACE,
		"Options of tracing for fleet mode (\\fB\\-a\\fR, or \\fB\\-\\-window\\fR with "
		"\\fB\\-p\\fR; docs/fleet.md); those for fleet mode only are refused without "
		"either." },
	[SEC_CHECK] = { "check", FOR_CHECK, "Options of \\fBcheck\\fR." },
	[SEC_MERGE] = { "merge", FOR_MERGE, "Options of \\fBmerge\\fR." },
	[SEC_REPORT] = { "report", FOR_REPORT, "Options of \\fBreport\\fR." },
	[SEC_GENERAL] = { "All subcommands", FOR_ALL, "Options every subcommand takes." },
};

/* "Also for list.", "Fleet mode only.": how @d differs from its section's @cmds, if it does */
static void man_option_scope(FILE *f, const struct opt_def *d, unsigned int cmds)
{
	unsigned int also = d->cmds & FOR_ALL & ~cmds;
	int n = 0;

	for (int c = CMD_TRACE; c <= CMD_REPORT; c++)
		if (also & (1u << c))
			fprintf(f, "%s\\fB%s\\fR", n++ ? ", " : ".br\nAlso for ", cmd_names[c]);
	if (n)
		fputs(".\n", f);
	if (d->cmds & FLEET_ONLY)
		fputs(n++ ? "Fleet mode only.\n" : ".br\nFleet mode only.\n", f);
	if (d->cmds & NOT_FLEET)
		fputs(n++ ? "Not in fleet mode.\n" : ".br\nNot in fleet mode.\n", f);
}

static void man_options(FILE *f)
{
	for (int s = SEC_TRACE; s <= SEC_GENERAL; s++) {
		fprintf(f, ".SS %s\n%s\n", man_sections[s].title, man_sections[s].intro);
		for (size_t i = 0; i < opt_ndefs; i++) {
			const struct opt_def *d = &opt_defs[i];
			size_t j;

			if ((int)d->section != s || !d->help)
				continue;
			fputs(".TP\n", f);
			roff_opt(f, d, true, " ");
			/* the entries said with this one (--no-status, --period) */
			for (j = i + 1; j < opt_ndefs && !opt_defs[j].help; j++) {
				fputs(", ", f);
				roff_opt(f, &opt_defs[j], true, " ");
			}
			/* a label narrower than the indent (--json) would take the text beside it */
			fputs("\n.br\n", f);
			roff_text(f, d->help);
			fputc('\n', f);
			man_option_scope(f, d, man_sections[s].cmds);
		}
	}
	fputs(".SS Built-in probe tables\n"
	      "Names \\fB\\-\\-probes\\fR takes for a table compiled into the tool "
	      "(copies under \\fI/usr/share/spyre\\-bpftrace\\fR):", f);
	for (size_t i = 0; probes_builtin_name(i); i++)
		fprintf(f, "%s\\fB%s\\fR", i ? ", " : " ", probes_builtin_name(i));
	fputs(".\n", f);
}

static void man_exit_codes(FILE *f)
{
	for (size_t i = 0; i < ARRAY_SIZE(exit_defs); i++) {
		fprintf(f, ".TP\n.B %d\n", exit_defs[i].code);
		roff_text(f, exit_defs[i].what);
		fputc('\n', f);
	}
}

/* --man PART: one generated part of the man page; 0, or EXIT_USAGE for an unknown PART */
int env_man(FILE *f, const char *part)
{
	if (!strcmp(part, "synopsis"))
		man_synopsis(f);
	else if (!strcmp(part, "options"))
		man_options(f);
	else if (!strcmp(part, "exit-codes"))
		man_exit_codes(f);
	else if (!strcmp(part, "version"))
		fprintf(f, "%s\n", SPYRE_VERSION);
	else
		return -EINVAL;
	return 0;
}
