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
 *   dev=launch|complete|destroy|submit device-work role (see docs/user-guide.md); destroy:
 *                       the stream (stream=) ends, its device track goes to the next new
 *                       stream; submit: a call inside a launch whose return (an instant: its
 *                       entry) is when the device can have the work (a doorbell write)
 *   op=compute|h2d|d2h  kind of device operation launched (with dev=launch)
 *   key=argN|ret        value that matches a launch with its completion
 *   stream=argN         value identifying the stream (launch and complete)
 *   bytes=argN          transfer size (copies)
 *   mem=alloc|free      device memory: the function allocates or frees (see memledger.h)
 *   ptr=argN|ret        the allocated or freed pointer (mem=alloc: usually ret)
 *   size=argN           bytes allocated (mem=alloc)
 *   memdev=argN         device index of the allocation (mem=alloc; default device 0)
 * SYMBOL_GLOB is a wildcard pattern (globcap.h: fnmatch(3)'s syntax, with captures) matched
 * against the demangled qualified name and, failing that, against the raw (mangled) symbol
 * name. LIB_GLOB is an fnmatch(3) pattern matched against the basename of mapped files.
 * Two functions never share a display name: resolve.c makes a repeated one distinct.
 *
 * A '#' at the start of a token begins a comment ("name=a#b" keeps its '#'). Blanks are spaces,
 * tabs and '\r' (CRLF files work). The parser is strict, every one of these is an error:
 *   unknown key, key given twice, value empty or longer than its field (never truncated),
 *   argN outside 1..6, FMT other than d/i/u/x, a label outside [A-Za-z0-9_.-] or used twice,
 *   ret= or key=ret on type=instant (no return value at entry), argN=/ret=/dev= on type=unwind
 *   (it records nothing), dev=launch or dev=complete
 *   without key=, op= without dev=launch, key=/stream= without dev=, bytes= without dev=launch,
 *   stream=/bytes= other than argN, control characters anywhere, '"' or '\' or invalid UTF-8 in
 *   name/cat (they end up in JSON), a SYMBOL_GLOB that globcap_check refuses ('[' without
 *   ']', a trailing '\', [=a=], [.a.]), a bad name template; ptr=/size=/memdev= without mem=, mem= on
 *   type=unwind or with dev=, mem=alloc without ptr= and size=, mem=free without ptr= or with
 *   size=/memdev= or ptr=ret, ptr=ret on type=instant, size=/memdev= other than argN.
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

enum probe_type { PROBE_SPAN = 0, PROBE_INSTANT = 1, PROBE_UNWIND = 2 };
/* ARG_INT32: a C int; the upper half of its 64-bit register is undefined by the ABI */
enum arg_fmt { ARG_HEX = 0, ARG_UNSIGNED, ARG_SIGNED, ARG_INT32 };
enum dev_role { DEV_NONE = 0, DEV_LAUNCH, DEV_COMPLETE, DEV_DESTROY, DEV_SUBMIT };
enum dev_op { OP_NONE = 0, OP_COMPUTE, OP_H2D, OP_D2H };
enum mem_role { MEM_NONE = 0, MEM_ALLOC, MEM_FREE };

/* Where a value comes from: 1..6 = argument register, 0 = none, PROBE_VAL_RET = return value. */
#define PROBE_VAL_NONE 0
#define PROBE_VAL_RET  7

struct probe_arg {
	char label[32];
	int src;		/* 1..6 or PROBE_VAL_RET */
	enum arg_fmt fmt;
};

struct probe_spec {
	char lib[128];
	char sym[256];
	char name[96];
	char cat[48];
	enum probe_type type;
	struct probe_arg args[PROBE_MAX_ARGS + 1];	/* arguments, then at most one ret */
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
/*
 * --probes ARG: the built-in table named ARG when ARG has no '/' and names one, else the file
 * ARG (probes_parse_file). -ENOENT, with a message naming the built-in tables, when ARG has no
 * '/' and is neither.
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
