// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `list`'s account of each probe line: what it resolved to, where its returns are probed, what
 * each probe costs per call, and why a line resolved nowhere. Resolution (resolve/) and the cost
 * model (attach/cost) say it; this file only prints it.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include "attach/cost.h"
#include "report/listing.h"
#include "resolve/procmaps.h"
#include "resolve/resolve.h"

static void report_return(const struct target *t, const struct rprobe *p, FILE *f)
{
	int jumps = 0;

	if (p->ret == RET_URETPROBE) {
		fprintf(f, "        returns: uretprobe (--uretprobes)\n");
		return;
	}
	if (p->ret == RET_NONE) {
		fprintf(f, "        returns: NOT SEEN, entries only: %s\n", p->sites.why);
		return;
	}
	for (int k = 0; k < p->sites.n; k++)
		jumps += p->sites.v[k].jump;
	fprintf(f, "        returns: %d return instruction%s, %d tail jump%s", p->sites.n - jumps,
		p->sites.n - jumps == 1 ? "" : "s", jumps, jumps == 1 ? "" : "s");
	if (p->sites.indirect)
		fprintf(f, " (%d indirect jump%s not probed)", p->sites.indirect,
			p->sites.indirect == 1 ? "" : "s");
	/* file offsets, as for the entry: what a user (or the bench) can probe by hand */
	for (int k = 0; k < p->sites.n && k < 8; k++)
		fprintf(f, "%s%s%s+0x%lx", k ? ", " : " at ", p->sites.v[k].jump ? "jump " : "",
			path_basename(t->libs[p->lib].path),
			p->sym_off + (unsigned long)p->sites.v[k].off);
	if (p->sites.n > 8)
		fprintf(f, ", ...");
	fputc('\n', f);
	if (p->tail_followed)
		fprintf(f, "        tail calls: %d jump%s followed into %d function%s: %d more return "
			"site%s probed, each hit by every call of %s\n", p->tail_followed,
			p->tail_followed == 1 ? "" : "s", p->tail_funcs, p->tail_funcs == 1 ? "" : "s",
			p->tail_rets, p->tail_rets == 1 ? "" : "s",
			p->tail_funcs == 1 ? "that function" : "those functions");
	if (p->tail_lost)
		fprintf(f, "        tail calls: %d jump%s NOT followed (the span ends at the jump, "
			"ret unknown): %s\n", p->tail_lost, p->tail_lost == 1 ? "" : "s",
			p->tail_why);
}

static void report_where(const struct target *t, int s, FILE *f)
{
	int n = 0;

	fprintf(f, "%d function%s in", t->spec_hits[s], t->spec_hits[s] > 1 ? "s" : "");
	for (int l = 0; l < t->nlibs; l++) {
		bool here = false;

		for (int i = 0; i < t->cnt && !here; i++)
			here = t->probes[i].spec == s && t->probes[i].lib == l;
		if (here)
			fprintf(f, "%s %s", n++ ? "," : "", path_basename(t->libs[l].path));
	}
}

static void report_cost(const struct target *t, const struct hit_costs *costs,
			const struct rprobe *p, FILE *f)
{
	struct probe_cost pc;

	if (!costs)
		return;
	cost_probe(costs, t, p, &pc);
	fprintf(f, "        cost: ~%.1f us per call (entry %s; return: %s)\n", pc.ns / 1000,
		pc.entry, pc.ret);
}

/*
 * What happens to the instruction an entry probe is on, when it is not the kernel's cheap kind:
 * a mov or lea the entry program does (resolve/entryinsn.h) where the kernel lets it, else the
 * single step, naming that instruction where BPF could do it on a newer kernel.
 */
static const char *entry_note(const struct rprobe *p, const struct hit_costs *costs, char *buf,
			      size_t len)
{
	char insn[64];

	if (p->insn != INSN_SINGLESTEP)
		return "";
	if (!p->entry.len)
		return " [single-stepped: slow probe, see docs/performance.md]";
	entry_insn_str(&p->entry, insn, sizeof(insn));
	if (costs && costs->rets_emulated)
		snprintf(buf, len, " [%s done by BPF]", insn);
	else
		snprintf(buf, len, " [single-stepped: %s, done by BPF where the kernel lets it]",
			 insn);
	return buf;
}

/* `list GLOB`: a probe is shown when GLOB matches its display name or its function */
static bool shown(const char *glob, const char *name, const char *func)
{
	return !glob || !fnmatch(glob, name, 0) || (func && !fnmatch(glob, func, 0));
}

/* A line that resolved nowhere, in one line: why, for the user's own; -v says more. */
static void compact_missing(const struct target *t, int s, FILE *f)
{
	const struct probe_spec *sp = &t->table->specs[s];
	char why[2048];

	if (s >= t->user_from)
		fprintf(f, "%s: %s %s: NOT RESOLVED: %s\n", sp->origin, sp->lib, sp->sym,
			target_why_missing(t, s, why, sizeof(why)));
}

/* One line a probe: its name, its function, library and entry, what a call costs. */
static void listing_compact(const struct target *t, const struct hit_costs *costs,
			    const char *glob, FILE *f)
{
	int n = 0, missing = 0, shadowed = 0;

	for (int i = 0; i < t->cnt; i++) {
		const struct rprobe *p = &t->probes[i];
		struct probe_cost pc;
		char lib[48];

		if (!shown(glob, p->name, p->qualname))
			continue;
		if (!n++)
			fprintf(f, "%-24s %-44s %-22s %s\n", "NAME", "FUNCTION", "LIBRARY+OFFSET",
				costs ? "COST/CALL" : "");
		snprintf(lib, sizeof(lib), "%s+0x%lx", path_basename(t->libs[p->lib].path),
			 p->attach_off);
		fprintf(f, "%-24s %-44s %-22s", p->name, p->qualname, lib);
		if (costs) {
			cost_probe(costs, t, p, &pc);
			fprintf(f, " ~%.1f us", pc.ns / 1000);
		}
		if (p->ret == RET_NONE && t->table->specs[p->spec].type == PROBE_SPAN)
			fprintf(f, " (entries only)");
		fputc('\n', f);
	}
	for (int s = 0; s < t->table->cnt; s++) {
		const struct probe_spec *sp = &t->table->specs[s];

		if (t->spec_hits[s] || !shown(glob, sp->name, sp->sym))
			continue;
		if (t->spec_shadowed[s])
			shadowed++;
		else if (s >= t->user_from)
			compact_missing(t, s, f);
		else
			missing++;
	}
	if (glob && !n)
		fprintf(f, "no resolved probe's name or function matches '%s'\n", glob);
	if (missing)
		fprintf(f, "%d line%s of the built-in tables resolve%s nowhere here (-v says which "
			"and why)\n", missing, missing == 1 ? "" : "s", missing == 1 ? "s" : "");
	if (shadowed)
		fprintf(f, "%d line%s match%s only functions earlier lines own (-v says which)\n",
			shadowed, shadowed == 1 ? "" : "s", shadowed == 1 ? "es" : "");
}

void listing_table(const struct probe_table *t, const char *glob, FILE *f)
{
	int n = 0;

	for (int s = 0; s < t->cnt; s++) {
		const struct probe_spec *sp = &t->specs[s];

		if (!shown(glob, sp->name, sp->sym))
			continue;
		if (!n++)
			fprintf(f, "%-16s %-18s %-44s %s\n", "LINE", "LIBRARY", "FUNCTION", "NAME");
		fprintf(f, "%-16s %-18s %-44s %s%s%s\n", sp->origin, sp->lib, sp->sym,
			sp->name[0] ? sp->name : "(its own)",
			sp->type == PROBE_SPAN ? "" : " type=",
			sp->type == PROBE_SPAN ? "" : probe_type_name(sp->type));
	}
	if (glob && !n)
		fprintf(f, "no line's name or function matches '%s'\n", glob);
}

void listing_probes(const struct target *t, const struct hit_costs *costs, bool verbose,
		    const char *glob, FILE *f)
{
	char why[2048], note[128];

	if (!verbose) {
		listing_compact(t, costs, glob, f);
		return;
	}
	for (int s = 0; s < t->table->cnt; s++) {
		const struct probe_spec *sp = &t->table->specs[s];

		fprintf(f, "%s: %-14s %-44s -> ", sp->origin, sp->lib, sp->sym);
		if (t->spec_hits[s]) {
			fprintf(f, "resolved: ");
			report_where(t, s, f);
			fputc('\n', f);
			for (int i = 0; i < t->cnt; i++) {
				const struct rprobe *p = &t->probes[i];

				if (p->spec != s || !shown(glob, p->name, p->qualname))
					continue;
				fprintf(f, "    %-24s %s  %s+0x%lx%s%s\n", p->name, p->qualname,
					path_basename(t->libs[p->lib].path), p->attach_off,
					p->endbr ? " (after endbr64)" : "",
					entry_note(p, costs, note, sizeof(note)));
				if (sp->type == PROBE_SPAN)
					report_return(t, p, f);
				report_cost(t, costs, p, f);
			}
		} else if (t->spec_shadowed[s]) {
			fprintf(f, "0 of its own: its %d matching function%s belong%s to earlier "
				"lines\n", t->spec_shadowed[s], t->spec_shadowed[s] > 1 ? "s" : "",
				t->spec_shadowed[s] > 1 ? "" : "s");
		} else if (s >= t->user_from) {
			/* the user's line: what was searched, and what they may have meant */
			fprintf(f, "0, NOT RESOLVED: %s\n",
				target_why_missing(t, s, why, sizeof(why)));
		} else if (!t->spec_libs[s]) {
			fprintf(f, "0, NOT RESOLVED: no mapped library matches '%s'\n", sp->lib);
		} else {
			bool unreadable = false;

			for (int l = 0; l < t->nlibs; l++) {
				if (target_lib_matches(t, s, l) && t->libs[l].err) {
					fprintf(f, "0, NOT RESOLVED: cannot read %s: %s\n",
						t->libs[l].path, strerror(-t->libs[l].err));
					unreadable = true;
				}
			}
			if (!unreadable)
				fprintf(f, "0, NOT RESOLVED: no function matching '%s' in %d matching "
					"librar%s\n", sp->sym, t->spec_libs[s],
					t->spec_libs[s] > 1 ? "ies" : "y");
		}
	}
	for (int l = 0; l < t->nlibs; l++) {
		const struct rlib *lib = &t->libs[l];
		int n = 0;

		if (!lib->tail_only) {
			/* the other names its glob may have matched */
			fprintf(f, "library %s", lib->path);
			if (lib->soname)
				fprintf(f, " (soname %s)", lib->soname);
			if (lib->alias)
				fprintf(f, " (as %s)", lib->alias);
			fprintf(f, ": %d probe%s\n", lib->nprobes, lib->nprobes == 1 ? "" : "s");
			continue;
		}
		for (int k = 0; k < t->ntails; k++)
			n += t->tails[k].lib == l;
		if (!n)
			continue;	/* only passed through (operator delete jumping to free) */
		fprintf(f, "library %s: no probe, %d return site%s of tail-called functions\n",
			lib->path, n, n == 1 ? "" : "s");
	}
}
