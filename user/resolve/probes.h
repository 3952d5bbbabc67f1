/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Probe table: what to probe comes from data, not code. A site can add the symbols of its
 * runtime version with --probe or a spec file, without recompiling.
 *
 * Spec file: one probe per line, '#' starts a comment, fields separated by blanks:
 *   LIB_GLOB SYMBOL_GLOB [key=value ...]
 * keys:
 *   name=STR      display name (default: the demangled qualified name, without parameters, of
 *                       each function matched: "at::_ops::addmm::call"); {N} in STR is what
 *                       the N-th '*' of SYMBOL_GLOB matched ("at::_ops::*::call name=aten::{1}"
 *                       gives "aten::addmm"), {{ and }} are literal braces, other braces and
 *                       an N beyond the glob's '*' (or beyond 16) are errors
 *   cat=STR       trace category (default privateuse1_runtime)
 *   type=span|instant|unwind   span = uprobe+uretprobe (default); instant = entry only;
 *                       unwind = an exception unwinder's entry point: no event, it lets C++
 *                       exceptions pass through traced calls (see bpf/spyre.bpf.c)
 *   argN=LABEL[:FMT]    record argument N (1..6) under LABEL; FMT = d (signed), i (32-bit int),
 *                       u, x (hex, default)
 *   ret=LABEL[:FMT]     record the return value
 *   DEREF=LABEL[:FMT]   record the u64 a dereference (below) reads, e.g. arg3[8]=bytes:u
 *   dev=ROLE            device-work role (see docs/user-guide.md):
 *                       launch: starts an operation (op=, key=, stream=, bytes=)
 *                       complete: an operation's completion callback (key=, stream=)
 *                       destroy: the stream (stream=) ends, its device track goes to the next
 *                         new stream
 *                       submit: a call inside a launch whose return (an instant: its entry) is
 *                         when the device can have the work (a doorbell write)
 *                       sync: a stream's synchronize (span, stream=): at its return every
 *                         operation launched on the stream before its entry has completed
 *                       query: a stream's query (span, stream=): when it returns true (low byte
 *                         of the return register), the same
 *                       kname: the call's string (str=) names the next compute launch made on
 *                         the same thread
 *   op=compute|h2d|d2h  kind of device operation launched (with dev=launch)
 *   key=SRC             value that matches a launch with its completion (optional on launches:
 *                       without it, only sync, query or a later completion on the stream end it)
 *   stream=SRC          value identifying the stream (launch, complete, destroy, sync, query)
 *   bytes=SRC           transfer size (copies)
 *   mem=alloc|free      device memory: the function allocates or frees (see memledger.h)
 *   ptr=SRC             the allocated or freed pointer (mem=alloc: usually ret)
 *   size=SRC            bytes allocated (mem=alloc)
 *   memdev=SRC          device index of the allocation (mem=alloc; default device 0)
 *   str=argN[:c]        the call carries a string, shown as args.name: argN points to a
 *                       libstdc++ std::string (its data pointer at +0), or with :c is a plain
 *                       const char *; up to PROBE_STR_MAX chars. Such probes are never sampled.
 *   dist=rank|size      the return value is the process's rank / world size (distributedInfo)
 * SRC is argN, ret (key=, ptr= only) or a dereference: the u64 in user memory at
 *   argN[OFF]  argument N + OFF
 *   ret[OFF]   the return value + OFF
 *   sret[OFF]  the result a function returns by value through the hidden result pointer, + OFF:
 *              the pointer is the first integer argument register (x86-64 rdi, s390x r2,
 *              ppc64le r3), so for a C++ member returning a class sret = arg1, this = arg2.
 * OFF is decimal or 0x hex, 0..4095. Dereferences are read when the record is made: at the
 * return for spans (arguments as they were at entry, memory as it is at the return), at the
 * entry for instants; a read that faults gives 0 and is counted (derefFaults). At most
 * PROBE_MAX_DEREFS distinct dereferences per probe.
 * SYMBOL_GLOB is a wildcard pattern (globcap.h: fnmatch(3)'s syntax, with captures) matched
 * against the demangled qualified name and, failing that, against the raw (mangled) symbol
 * name. LIB_GLOB is an fnmatch(3) pattern matched against the basename of mapped files.
 * Two functions never share a display name: resolve.c makes a repeated one distinct.
 *
 * A '#' at the start of a token begins a comment ("name=a#b" keeps its '#'). Blanks are spaces,
 * tabs and '\r' (CRLF files work). The parser is strict, every one of these is an error:
 *   unknown key, key given twice, value empty or longer than its field (never truncated),
 *   argN outside 1..6, FMT other than d/i/u/x, a label outside [A-Za-z0-9_.-] or used twice,
 *   ret=, ret[OFF], sret[OFF] or key=ret on type=instant (no return value at entry),
 *   argN=/ret=/dev=/str= on type=unwind or catch (they record nothing), dev=complete
 *   without key=, op= without dev=launch, key=/stream= without dev=, bytes= without dev=launch,
 *   stream=/bytes= ret, dev=sync/query without stream= or not a span, dev=kname without str=,
 *   key=/op=/bytes= on sync/query/kname, dist= on a non-span or with dev=/mem=, an OFF out of
 *   range, more than PROBE_MAX_DEREFS dereferences, control characters anywhere, '"' or '\' or invalid UTF-8 in
 *   name/cat (they end up in JSON), a SYMBOL_GLOB that globcap_check refuses ('[' without
 *   ']', a trailing '\', [=a=], [.a.]), a bad name template; ptr=/size=/memdev= without mem=, mem= on
 *   type=unwind/catch or with dev=, mem=alloc without ptr= and size=, mem=free without ptr= or with
 *   size=/memdev= or ptr=ret or a dereference (its entry record carries none), ptr=ret on
 *   type=instant, size=/memdev= ret.
 *
 * Command line: LIB:SYMBOL_GLOB[:NAME]; "::" inside the symbol is part of the C++ name. A single
 * ':' separates fields, ":::" is rejected as ambiguous, LIB cannot contain ':'. NAME is a
 * template as name= is.
 *
 * Built-in tables, compiled in, are chosen by name: "spyre" (user/resolve/spyre-default.probes, loaded
 * unless --no-default) and "torch" (user/resolve/torch.probes: PyTorch's op layer, autograd, the CPU
 * allocator). --probes ARG takes a built-in table when ARG has no '/' and is one's name, a file
 * otherwise ("./torch" for a file named torch).
 */
#ifndef SPYRE_PROBES_H
#define SPYRE_PROBES_H

#include <stdbool.h>
#include <stdio.h>

#define PROBE_MAX_ARGS 6
/* Spec files larger than this are refused (-EFBIG): a probe table is a few kB. */
#define PROBES_FILE_MAX (1 << 20)

/*
 * PROBE_UNWIND: an exception unwinder's entry point (--uretprobes' guard); PROBE_CATCH: where a
 * handler takes a caught exception (__cxa_begin_catch), the point at which the calls the
 * exception left are known to be over. Both record nothing (probe_records_nothing).
 */
enum probe_type { PROBE_SPAN = 0, PROBE_INSTANT = 1, PROBE_UNWIND = 2, PROBE_CATCH = 3 };

static inline bool probe_records_nothing(enum probe_type t)
{
	return t == PROBE_UNWIND || t == PROBE_CATCH;
}

/* The type= word of @t: "span", "instant", "unwind" or "catch". */
static inline const char *probe_type_name(enum probe_type t)
{
	return t == PROBE_CATCH ? "catch" : t == PROBE_UNWIND ? "unwind" :
	       t == PROBE_INSTANT ? "instant" : "span";
}
/*
 * ARG_INT32: a C int; the upper half of its 64-bit register is undefined by the ABI. ARG_BOOL: a
 * C++ bool, its low byte alone defined (a query() returning true read as an int was -1396429055)
 */
enum arg_fmt { ARG_HEX = 0, ARG_UNSIGNED, ARG_SIGNED, ARG_INT32, ARG_BOOL };
enum dev_role {
	DEV_NONE = 0, DEV_LAUNCH, DEV_COMPLETE, DEV_DESTROY, DEV_SUBMIT, DEV_SYNC, DEV_QUERY,
	DEV_KNAME,
};
enum dev_op { OP_NONE = 0, OP_COMPUTE, OP_H2D, OP_D2H };
enum mem_role { MEM_NONE = 0, MEM_ALLOC, MEM_FREE };
enum dist_role { DIST_NONE = 0, DIST_RANK, DIST_SIZE };
enum str_kind { STR_NONE = 0, STR_CXX, STR_C };	/* std::string *, const char * */

/*
 * Where a value comes from: 1..6 = argument register, 0 = none, PROBE_VAL_RET = return value,
 * PROBE_VAL_DEREF + i = the u64 the probe's dereference i read (deref[i]).
 */
#define PROBE_VAL_NONE  0
#define PROBE_VAL_RET   7
#define PROBE_VAL_SRET  8	/* only as a dereference's base: the hidden result pointer */
#define PROBE_VAL_DEREF 16
/* Dereferences a probe's record carries (struct spyre_rec_call's deref[]) */
#define PROBE_MAX_DEREFS 2
#define PROBE_DEREF_MAX_OFF 4095
/* Chars of a str= string a record carries (SPYRE_STR_LEN - 1) */
#define PROBE_STR_MAX 63
/* Values a probe records under labels: argN=, DEREF=, then ret= */
#define PROBE_MAX_LABELS (PROBE_MAX_ARGS + PROBE_MAX_DEREFS + 1)

struct probe_arg {
	char label[32];
	int src;		/* PROBE_VAL_* */
	enum arg_fmt fmt;
};

/* A dereference: the u64 at user address (value of @src) + @off */
struct probe_deref {
	int src;		/* 1..6, PROBE_VAL_RET or PROBE_VAL_SRET */
	unsigned int off;
};

struct probe_spec {
	char lib[256];		/* a name glob, or with '/' the file's canonical path (a glob) */
	char sym[256];
	char name[96];
	char cat[48];
	enum probe_type type;
	struct probe_arg args[PROBE_MAX_LABELS];	/* arguments, then at most one ret */
	int nargs;		/* entries in args[], the ret entry (if any) included */
	enum dev_role dev;
	enum dev_op op;
	int key;		/* PROBE_VAL_* */
	int stream;		/* PROBE_VAL_* */
	int bytes;		/* PROBE_VAL_* */
	enum mem_role mem;
	int ptr;		/* PROBE_VAL_*: pointer allocated or freed */
	int size;		/* PROBE_VAL_*: bytes allocated */
	int memdev;		/* PROBE_VAL_*: device of the allocation; NONE: device 0 */
	struct probe_deref deref[PROBE_MAX_DEREFS];	/* what PROBE_VAL_DEREF + i reads */
	int nderef;
	enum str_kind str;
	int str_arg;		/* 1..6: the argument str= reads */
	enum dist_role dist;
	int py;			/* py=1: the caller's Python stack at entry (stream/pystack.h) */
	int stack;		/* stack=1: the caller's native stack at entry (stream/ustack.h) */
	char origin[64];	/* "file:line" or "--probe", for error messages */
};

struct probe_table {
	struct probe_spec *specs;
	int cnt;
	size_t cap;
};

/*
 * Parse a whole spec text and append its probes, in order (duplicates are kept). @origin names
 * it in errors. -EINVAL on a malformed line, with a message "ORIGIN:LINE: what" written to @err
 * (size @errlen, may be NULL/0); -ENOMEM. On any error the table keeps exactly the probes it had
 * before the call: a text is added entirely or not at all.
 */
int probes_parse_text(struct probe_table *t, const char *text, const char *origin,
		      char *err, size_t errlen);
/* Origin is @path. -errno when unreadable, -EFBIG beyond PROBES_FILE_MAX, -EINVAL on NUL bytes. */
int probes_parse_file(struct probe_table *t, const char *path, char *err, size_t errlen);
/* --probe LIB:SYMBOL_GLOB[:NAME]; a span probe with defaults, origin "--probe". */
int probes_parse_cli(struct probe_table *t, const char *arg, char *err, size_t errlen);
/* The table shipped with the tool (user/resolve/spyre-default.probes, compiled in). */
int probes_load_default(struct probe_table *t, char *err, size_t errlen);
extern const char probes_default_text[];
extern const char probes_torch_text[];
/* Is @name the name of a built-in table? */
bool probes_builtin(const char *name);
/* The @i-th built-in table's name (the help, the man page, completion); NULL past the last */
const char *probes_builtin_name(size_t i);
/*
 * --probes ARG: the built-in table named ARG when ARG has no '/' and names one, else the file
 * ARG (probes_parse_file). -EINVAL (a usage error), with a message naming the built-in tables
 * and the one a typo most likely meant, when ARG has no '/' and is neither.
 */
int probes_load(struct probe_table *t, const char *arg, char *err, size_t errlen);

struct globcap;
/*
 * Display name of a function @s matched: s->name with each {N} replaced by what the N-th '*' of
 * s->sym matched in @matched (the qualified or raw name the glob matched, @caps from
 * globcap_match); without name=, @qualname; else s->sym. An expansion that comes out empty
 * gives @qualname too. malloc'd, never truncated; NULL when out of memory.
 */
char *probe_name(const struct probe_spec *s, const char *qualname, const char *matched,
		 const struct globcap *caps);
/* Frees the specs and zeroes the table, which can then be reused. */
void probes_free(struct probe_table *t);

#endif
