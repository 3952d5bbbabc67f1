/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Resolve a probe table in one target: which mapped libraries match, which of their functions
 * match, at which file offsets to attach. No libbpf here, so it is testable without root.
 */
#ifndef SPYRE_RESOLVE_H
#define SPYRE_RESOLVE_H

#include <stdbool.h>
#include <stdio.h>
#include "resolve/probes.h"
#include "resolve/entryinsn.h"
#include "resolve/retsite.h"

struct soname_slot;

/* How the return of a span probe's call is seen. */
enum ret_how {
	RET_SITES = 0,	/* uprobes on its return instructions and tail jumps (default) */
	RET_URETPROBE,	/* --uretprobes: the kernel's return probe */
	RET_NONE,	/* no safe way found: entries only (instants), see rprobe.sites.why */
};

struct rprobe {
	int spec;		/* index into the probe table */
	int lib;		/* index into target.libs */
	/*
	 * Display name: the spec's name (or template) or the qualified name, and when another
	 * function resolved earlier has that name already, " (QUALNAME)", " (SIGNATURE)"
	 * (overloads) or " (LIBRARY PATH)" (another library), the first that tells the two
	 * apart and is free, else " #N" (N = 2, 3, ...); overloads of one function in one
	 * library each "NAME(PARAMETERS)", the first too (name_overloads). Shared only by the
	 * same function in another file of its library (same basename, same symbol): one name;
	 * those have other_file set. malloc'd.
	 */
	char *name;
	char *shared_name;	/* the name before it was made distinct; NULL if it was not */
	char *qualname;		/* demangled qualified name (or raw name) */
	char *symbol;		/* the symbol as stored (mangled) */
	/* its name is shared with the same function in another file: events carry the file */
	bool other_file;
	unsigned long sym_off;	/* file offset of the function's first instruction */
	unsigned long attach_off; /* where the uprobe goes (past endbr64) */
	bool endbr;
	bool attached;
	bool failed;		/* the kernel refused its uprobe: not traced (said once) */
	/*
	 * What the kernel does with the instruction under the probe: x86 emulates push and
	 * optimizes a 5-byte nop, anything else is single-stepped (~15 µs a hit on a VM instead
	 * of ~0.7 µs). `list` says which, so a costly probe can be spotted before tracing.
	 */
	enum { INSN_UNKNOWN = 0, INSN_EMULATED, INSN_SINGLESTEP } insn;
	/* a single-stepped mov or lea the entry program can do instead (entryinsn.h), len 0 if not */
	struct entry_insn entry;
	enum ret_how ret;	/* span probes */
	struct ret_sites sites;	/* RET_SITES: offsets from sym_off; RET_NONE: why */
	/*
	 * Its tail jumps (sites.v[].followed, target_follow_tails): how many are followed, into
	 * how many functions, whose return sites (t->tails) are how many; how many are not, and
	 * why (the last reason). Each followed function's returns are hit by all its callers.
	 */
	bool tails_done;
	int tail_followed, tail_funcs, tail_rets, tail_lost;
	const char *tail_why;
};

/* A return site of a function that traced calls tail-jump to (spyre_tail_ret), once each. */
struct tail_site {
	int lib;		/* index into target.libs */
	unsigned long off;	/* file offset */
	int users;		/* probes whose chains end here */
	uint16_t pop;		/* ret_site.pop */
	bool attached;
};

/* A file the target maps: where a tail call through the PLT may land. */
struct mapped_file {
	char *path, *open_path;
	unsigned long ino;
	unsigned int dev_major, dev_minor;
};

struct rlib {
	char *path;		/* as mapped in the target */
	/*
	 * Other names a library glob matches besides the path's basename, NULL when there is
	 * none or it is the basename: its DT_SONAME ("libstdc++.so.6" for the file
	 * libstdc++.so.6.0.30), and the name it was asked for by in launch mode (the name ldd
	 * prints, the command's name when it is a symbolic link: "python3" for python3.11).
	 */
	char *soname;
	char *alias;
	char *open_path;	/* what we open/attach: /proc/PID/map_files/A-B, or path */
	unsigned long ino;
	unsigned int dev_major, dev_minor;
	int nprobes;		/* functions resolved in it */
	int nfuncs;		/* functions it has (the probe globs were matched against) */
	int err;		/* -errno when its ELF could not be read */
	int fd;			/* with pin_libs: held open, open_path = /proc/self/fd/N */
	bool warned;		/* err already reported */
	bool tail_only;		/* no probe: only return sites of tail-called functions */
};

struct target {
	int pid;
	const struct probe_table *table;
	struct rprobe *probes;
	int cnt;
	size_t cap;
	struct rlib *libs;
	int nlibs;
	size_t libs_cap;
	int *spec_hits;		/* per spec: functions resolved */
	int *spec_libs;		/* per spec: libraries whose name matched */
	int *names;		/* hash of probes[].name: probe index + 1, 0 empty */
	unsigned int names_cap;	/* power of two, at least twice cnt */
	int max_probes;		/* functions resolved at most (-E2BIG past it) */
	bool too_many_warned;	/* target_warn_too_many said it for a later library */
	int *spec_shadowed;	/* per spec: matching functions an earlier line owns */
	/*
	 * Specs from here on are the user's (--probe, --probes): one that resolves nowhere is a
	 * typo until shown otherwise. The built-in table's lines come first and may match
	 * nothing (a job without the Spyre runtime).
	 */
	int user_from;
	char **mapped;		/* basenames of the mapped files seen, each once (near misses) */
	int nmapped;
	size_t mapped_cap;
	char **also;		/* their other names (DT_SONAME, alias), each once: near misses */
	int nalso;
	size_t also_cap;
	/* system-wide: probes are attached again in later windows, after the process whose
	 * map_files gave us the library may be gone; hold the library open instead */
	bool pin_libs;
	/* span returns through the kernel's uretprobes instead of return sites */
	bool uretprobes;
	/*
	 * Why no return site may be used on this machine (the start-up self-test failed,
	 * retcheck.h); NULL: they may. target_sites_off sets it.
	 */
	const char *sites_off;
	/*
	 * The BPF takes all of a thread's open calls to be on one stack (no bpf_find_vma with
	 * a callback here): a coroutine's calls may be ended as unwound by a switch
	 */
	bool one_stack;
	int entry_only;		/* span probes left with RET_NONE */
	/* DT_SONAME per mapped file (dev, inode), read once: open addressing */
	struct soname_slot *sonames;
	unsigned int sonames_cap, nsonames;
	struct tail_site *tails;	/* see target_follow_tails */
	int ntails;
	size_t tails_cap;
	struct mapped_file *files;	/* every file mapped (or to be, launch mode) */
	int nfiles;
	size_t files_cap;
};

int target_init(struct target *t, int pid, const struct probe_table *table, int max_probes);
void target_free(struct target *t);

/*
 * Read a maps stream and resolve probes in every library not seen before. @map_files is the
 * target's /proc/PID/map_files directory (libraries are opened through it: that survives a
 * file replaced on disk and crosses mount namespaces); NULL opens the mapped paths as they
 * are (tests). Returns the number of new probes, or -errno (-E2BIG: more than max_probes).
 */
int target_scan_maps(struct target *t, FILE *maps, const char *map_files);
/* Same for /proc/PID/maps of t->pid. */
int target_scan(struct target *t);
/*
 * Same for every process in @procfs not scanned before (all of them with @all), @seen holding
 * those scanned, @jobs (may be NULL) given those of them that map the runtime (a file a span or
 * instant line names); returns new probes or -errno. The session rescans with it (fleet
 * mode's -a, and -p PID --window).
 */
struct intset;
/*
 * Whether the maps stream @maps has a file a span or instant line of @table names by its path
 * or basename (DT_SONAME is not read): a process with the runtime, `list` without -p. The
 * first such file's basename into @lib.
 */
bool table_maps_runtime(const struct probe_table *table, FILE *maps, char *lib, size_t len);
int target_scan_procs(struct target *t, struct intset *seen, struct intset *jobs, bool all,
		      const char *procfs);
/*
 * Resolve one file by path (launch mode: the executable and its libraries, not mapped yet),
 * under its real path (as the maps will show it); @alias is the name it was asked for by (what
 * ldd prints, the command's name), NULL for @path's basename.
 */
int target_add_lib(struct target *t, const char *path, const char *alias);
/* Does spec @s's LIB_GLOB match library @l (its basename, DT_SONAME or alias)? */
bool target_lib_matches(const struct target *t, int s, int l);
/*
 * No return site on this machine, for the static reason @why: the span probes resolved with
 * sites record entries only from now on (nothing may be attached yet), and so do those of
 * libraries resolved later, each with a short reason that points to the self-test. Returns how
 * many probes lost their sites.
 */
int target_sites_off(struct target *t, const char *why);

/*
 * The probes' names (resolve_names.c): probe @i's name entered in the names' hash (-ENOMEM);
 * a name for function @f of library @lib from @base that no other function's probe has, into
 * *@out (malloc'd; 0, -ENOMEM); probe @i's copies in other files of its library marked; the
 * overloads among the probes from @first on named by their parameters (0, -ENOMEM).
 */
struct elf_func;
int target_name_add(struct target *t, int i);
int target_distinct_name(const struct target *t, int lib, const struct elf_func *f,
			 const char *base, char **out);
void target_mark_other_files(struct target *t, int i);
int target_name_overloads(struct target *t, int first);

/* The index of the library that is file (@maj, @min, @ino), or @path when @ino is 0; -1: none */
int target_find_lib(const struct target *t, unsigned int maj, unsigned int min,
		    unsigned long ino, const char *path);
/*
 * Follow the tail jumps of the span probes not followed yet (tailcall.h) through the files
 * known (target_scan* and target_add_lib note every one): sets their sites' followed and nests,
 * adds the return sites of what they reach to t->tails (with libraries of their own, tail_only,
 * when no probe is in them). Called by target_scan_maps; launch mode calls it once the
 * libraries are added. -ENOMEM, else 0.
 */
int target_follow_tails(struct target *t);

/* One warning on stderr per library that matched but could not be read (once each). Returns
 * how many libraries are unreadable. */
int target_warn_unreadable(struct target *t);

/*
 * Say that more functions match than t->max_probes, on stderr: at start (@later false), an
 * error naming --max-probes; for a library loaded later, a warning, once.
 */
void target_warn_too_many(struct target *t, bool later);

/* Does user spec @s resolve nowhere (no function of its own, none owned by an earlier line)? */
bool target_spec_missing(const struct target *t, int s);
/*
 * Why spec @s resolves nowhere, into @buf: what was searched (the libraries its LIB_GLOB
 * matched and their function counts, or a few mapped basenames) and the near misses (closest
 * symbols of those libraries, or closest basenames). Reads the matched libraries' symbols
 * again: for error paths and `list` only. Returns @buf.
 */
const char *target_why_missing(const struct target *t, int s, char *buf, size_t len);
/*
 * On stderr, "spyre-bpftrace: PREFIXORIGIN: LIB SYMBOL resolves nowhere: why" for each user
 * spec that resolves nowhere and is not yet in @said (per spec, set here): a warning (pr_warn)
 * when @prefix is "warning: ", an error (pr_err) with @prefix otherwise; with @mapped_only
 * only those whose LIB_GLOB matched a library (launch mode: the others may be dlopen'ed
 * later). Returns how many were printed.
 */
int target_say_missing(const struct target *t, const char *prefix, bool mapped_only, bool *said);

#endif
