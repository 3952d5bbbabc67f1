// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <unistd.h>

#include "unit.h"
#include "resolve/globcap.h"
#include "resolve/probes.h"

static const struct probe_spec *find_sym(const struct probe_table *t, const char *sym)
{
	for (int i = 0; i < t->cnt; i++)
		if (!strcmp(t->specs[i].sym, sym))
			return &t->specs[i];
	return NULL;
}

/* "default:<line>" of the table line that probes sym: the table's comments move, its lines stay */
static const char *origin_of(const char *sym, char *buf, size_t len)
{
	const char *p = probes_default_text;
	int line = 1;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		const char *tab = memchr(p, '\t', n);

		if (*p != '#' && tab) {
			while (tab < p + n && *tab == '\t')
				tab++;
			if (!strncmp(tab, sym, strlen(sym)) &&
			    (tab[strlen(sym)] == '\t' || tab[strlen(sym)] == ' ')) {
				snprintf(buf, len, "default:%d", line);
				return buf;
			}
		}
		if (!nl)
			break;
		p = nl + 1;
		line++;
	}
	return "not in the table";
}

TEST(probes_default_table)
{
	struct probe_table t = {};
	const struct probe_spec *s;
	char err[256] = "untouched";
	char origin[64];

	CHECK_EQ_INT(probes_load_default(&t, err, sizeof(err)), 0);
	CHECK_STR(err, "");
	CHECK_EQ_INT(t.cnt, 46);
	CHECK(t.cap >= (size_t)t.cnt);

	/* a void launch: bytes and key read through its DmaParams */
	s = find_sym(&t, "flex::RuntimeStream::launchOperationD2H");
	CHECK(s);
	if (s) {
		CHECK_STR(s->lib, "libflex.so*");
		CHECK_STR(s->name, "aiuDataTransferDtoH");
		CHECK_STR(s->cat, "privateuse1_runtime");
		CHECK_STR(s->origin, origin_of(s->sym, origin, sizeof(origin)));
		CHECK_EQ_INT(s->type, PROBE_SPAN);
		CHECK_EQ_INT(s->nargs, 2);
		CHECK_STR(s->args[0].label, "stream");
		CHECK_EQ_INT(s->args[0].src, 1);
		CHECK_EQ_INT(s->args[0].fmt, ARG_HEX);
		CHECK_STR(s->args[1].label, "bytes");
		CHECK_EQ_INT(s->args[1].fmt, ARG_UNSIGNED);
		CHECK_EQ_INT(s->dev, DEV_LAUNCH);
		CHECK_EQ_INT(s->op, OP_D2H);
		CHECK_EQ_INT(s->stream, 1);
		CHECK_EQ_INT(s->nderef, 2);
		/* bytes = DmaParams::size, key = DmaParams::callback's functor */
		CHECK_EQ_INT(s->bytes, s->args[1].src);
		CHECK(s->bytes >= PROBE_VAL_DEREF && s->key >= PROBE_VAL_DEREF);
		if (s->bytes >= PROBE_VAL_DEREF && s->key >= PROBE_VAL_DEREF &&
		    s->bytes - PROBE_VAL_DEREF < 2 && s->key - PROBE_VAL_DEREF < 2) {
			CHECK_EQ_INT(s->deref[s->bytes - PROBE_VAL_DEREF].src, 2);
			CHECK_EQ_INT(s->deref[s->bytes - PROBE_VAL_DEREF].off, 8);
			CHECK_EQ_INT(s->deref[s->key - PROBE_VAL_DEREF].src, 2);
			CHECK_EQ_INT(s->deref[s->key - PROBE_VAL_DEREF].off, 32);
		}
	}

	/* H2D and compute launches have no key: the stream's later evidence ends them */
	s = find_sym(&t, "flex::RuntimeStream::launchOperationCompute");
	CHECK(s);
	if (s) {
		CHECK_EQ_INT(s->dev, DEV_LAUNCH);
		CHECK_EQ_INT(s->op, OP_COMPUTE);
		CHECK_EQ_INT(s->key, PROBE_VAL_NONE);
	}

	/* the D2H callback's invoker completes the copy, keyed by its functor */
	s = find_sym(&t, "std::_Function_handler<*spyre::JobPlanStepD2H::construct*>::_M_invoke");
	CHECK(s);
	if (s) {
		CHECK_STR(s->name, "aiuDmaCallback");
		CHECK_STR(s->origin, origin_of(s->sym, origin, sizeof(origin)));
		CHECK_EQ_INT(s->type, PROBE_INSTANT);
		CHECK_EQ_INT(s->dev, DEV_COMPLETE);
		CHECK(s->key >= PROBE_VAL_DEREF);
		if (s->key >= PROBE_VAL_DEREF && s->key - PROBE_VAL_DEREF < 2) {
			CHECK_EQ_INT(s->deref[s->key - PROBE_VAL_DEREF].src, 1);
			CHECK_EQ_INT(s->deref[s->key - PROBE_VAL_DEREF].off, 0);
		}
	}

	s = find_sym(&t, "flex::RuntimeStream::synchronize");
	CHECK(s);
	if (s) {
		CHECK_EQ_INT(s->dev, DEV_SYNC);
		CHECK_EQ_INT(s->stream, 1);
	}
	s = find_sym(&t, "flex::RuntimeStream::query");
	CHECK(s);
	if (s)
		CHECK_EQ_INT(s->dev, DEV_QUERY);
	s = find_sym(&t, "flex::createComputeParams");
	CHECK(s);
	if (s) {
		CHECK_EQ_INT(s->dev, DEV_KNAME);
		CHECK_EQ_INT(s->str, STR_CXX);
	}

	/* no public source destroys a stream: ~RuntimeStream is the mock's table's (below) */
	CHECK(!find_sym(&t, "flex::RuntimeStream::~RuntimeStream"));

	s = find_sym(&t, "spyre_comms::Context::getRank");
	CHECK(s);
	if (s)
		CHECK_EQ_INT(s->dist, DIST_RANK);

	/* no invented symbol is left (senlib, flex::detail) */
	for (int i = 0; i < t.cnt; i++) {
		CHECK(strncmp(t.specs[i].sym, "senlib::", 8));
		CHECK(strncmp(t.specs[i].sym, "flex::detail::", 14));
	}

	s = find_sym(&t, "_Unwind_RaiseException");
	CHECK(s);
	if (s) {
		CHECK_STR(s->lib, "libgcc_s.so*");
		CHECK_EQ_INT(s->type, PROBE_UNWIND);
		CHECK_EQ_INT(s->nargs, 0);
	}

	/* the handlers of caught exceptions: where the calls an exception left end */
	s = find_sym(&t, "__cxa_begin_catch");
	CHECK(s);
	if (s) {
		CHECK_STR(s->lib, "libstdc++.so*");
		CHECK_STR(s->name, "catchBegin");
		CHECK_EQ_INT(s->type, PROBE_CATCH);
		CHECK(probe_records_nothing(s->type));
		CHECK_EQ_INT(s->nargs, 0);
	}
	CHECK(!probe_records_nothing(PROBE_SPAN) && !probe_records_nothing(PROBE_INSTANT));
	CHECK_STR(probe_type_name(PROBE_CATCH), "catch");
	CHECK_STR(probe_type_name(PROBE_SPAN), "span");

	s = find_sym(&t, "spyre::SpyreStream::launch");
	CHECK(s);
	if (s) {
		CHECK_STR(s->lib, "_C*.so");
		CHECK_EQ_INT(s->nargs, 0);
		CHECK_EQ_INT(s->dev, DEV_NONE);
		CHECK_EQ_INT(s->key, PROBE_VAL_NONE);
	}

	/* loading twice appends */
	CHECK_EQ_INT(probes_load_default(&t, err, sizeof(err)), 0);
	CHECK_EQ_INT(t.cnt, 92);
	probes_free(&t);
	CHECK(t.specs == NULL);
	CHECK_EQ_INT(t.cnt, 0);
	CHECK_EQ_INT(t.cap, 0);
}

/*
 * Each line of the default table names, in a "# <file>.cpp" comment at its end, the torch-spyre
 * source that calls or defines its function: a line nobody can trace to a public source is one
 * fitted to our mock. The unwinder and catch lines (libgcc_s, libunwind, libstdc++, libc++abi)
 * probe the C++ runtime, not Spyre: they are exempt.
 */
static bool names_its_source(const char *line, size_t n)
{
	const char *end = line + n, *c = line, *file, *dot;

	/* the comment: a '#' that begins a token ("name=a#b" keeps its '#') */
	while (c < end && !(*c == '#' && c > line && (c[-1] == ' ' || c[-1] == '\t')))
		c++;
	if (end - c < 2 || c[1] != ' ')
		return false;
	file = c + 2;
	for (dot = file; dot < end && (islower((unsigned char)*dot) || *dot == '_' || *dot == '/');
	     dot++)
		;
	return dot > file && end - dot >= 4 && !strncmp(dot, ".cpp", 4) &&
	       (dot + 4 == end || dot[4] == ' ');
}

static bool source_named(const char *line)
{
	return names_its_source(line, strlen(line));
}

/*
 * Each value of the default table read as its C++ type is (docs in spyre-default.probes;
 * torch-spyre's calls and the mock's declarations): a bool by its low byte, an int by its low
 * half, sizes unsigned, pointers and handles hex. A value not listed here fails the test.
 */
TEST(probes_default_value_formats)
{
	static const struct {
		const char *sym, *label;
		enum arg_fmt fmt;
	} want[] = {
		{ "flex::initializeRuntime", "devices", ARG_INT32 },	/* int num_devices */
		{ "flex::initializeRuntime", "rc", ARG_INT32 },
		{ "flex::getNumDevices", "devices", ARG_INT32 },	/* int */
		{ "flex::FlexAllocator::allocate", "bytes", ARG_UNSIGNED },	/* size_t */
		{ "spyre::SpyreAllocator::allocate", "bytes", ARG_UNSIGNED },
		{ "spyre::SpyreAllocator::ReportAndDelete", "ctx", ARG_HEX },	/* void * */
		{ "flex::RuntimeStream::query", "done", ARG_BOOL },	/* bool query() */
		{ "flex::RuntimeStream::query", "stream", ARG_HEX },
		{ "flex::RuntimeStream::synchronize", "stream", ARG_HEX },
		{ "flex::RuntimeStream::fillAsync", "stream", ARG_HEX },
		{ "flex::RuntimeStream::launchOperationH2D", "stream", ARG_HEX },
		{ "flex::RuntimeStream::launchOperationH2D", "bytes", ARG_UNSIGNED },
		{ "flex::RuntimeStream::launchOperationD2H", "stream", ARG_HEX },
		{ "flex::RuntimeStream::launchOperationD2H", "bytes", ARG_UNSIGNED },
		{ "flex::RuntimeStream::launchOperationCompute", "stream", ARG_HEX },
		{ "flex::RuntimeStream::launchOperationHostCallback", "stream", ARG_HEX },
		{ "spyre_comms::Context::*", "bytes", ARG_UNSIGNED },	/* Tensor's size_t */
		{ "spyre_comms::Context::*", "dtype", ARG_INT32 },	/* an enum */
		{ "spyre_comms::Context::*", "op", ARG_INT32 },	/* SpyreReductionOpType */
		{ "spyre_comms::Context::*", "root", ARG_INT32 },	/* int root, dst, src, tag */
		{ "spyre_comms::Context::*", "peer", ARG_INT32 },
		{ "spyre_comms::Context::*", "tag", ARG_INT32 },
		{ "spyre_comms::Context::getRank", "rank", ARG_INT32 },	/* int */
		{ "spyre_comms::Context::getSize", "size", ARG_INT32 },
	};
	struct probe_table t = {};
	char err[256];

	CHECK_EQ_INT(probes_load_default(&t, err, sizeof(err)), 0);
	for (int i = 0; i < t.cnt; i++) {
		for (int a = 0; a < t.specs[i].nargs; a++) {
			const struct probe_arg *arg = &t.specs[i].args[a];
			bool found = false;

			for (size_t w = 0; w < sizeof(want) / sizeof(want[0]) && !found; w++) {
				const char *ws = want[w].sym;
				size_t n = strlen(ws);
				bool sym = ws[n - 1] == '*' ? !strncmp(t.specs[i].sym, ws, n - 1) :
					   !strcmp(t.specs[i].sym, ws);

				if (sym && !strcmp(arg->label, want[w].label)) {
					found = true;
					if (arg->fmt != want[w].fmt) {
						char m[256];

						snprintf(m, sizeof(m), "%s %s: format %d, want %d",
							 t.specs[i].sym, arg->label, arg->fmt,
							 want[w].fmt);
						unit_fail(__FILE__, __LINE__, m);
					}
				}
			}
			if (!found) {
				char m[256];

				snprintf(m, sizeof(m), "%s %s: no known type", t.specs[i].sym,
					 arg->label);
				unit_fail(__FILE__, __LINE__, m);
			}
		}
	}
	probes_free(&t);
	/* the format itself */
	CHECK_EQ_INT(probes_parse_text(&t, "l s arg2=flag:b ret=ok:b\n", "o", err, sizeof(err)), 0);
	CHECK_EQ_INT(t.cnt, 1);
	if (t.cnt == 1) {
		CHECK_EQ_INT(t.specs[0].args[0].fmt, ARG_BOOL);
		CHECK_EQ_INT(t.specs[0].args[1].fmt, ARG_BOOL);
	}
	CHECK_EQ_INT(probes_parse_text(&t, "l s ret=ok:B\n", "o", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "unknown format 'B' (b, d, i, u or x)"));
	probes_free(&t);
}

TEST(probes_default_lines_name_their_source)
{
	const char *p = probes_default_text;
	int lines = 0, exempt = 0, line = 1;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (n && *p != '#') {
			bool runtime = !strncmp(p, "libgcc_s.so", 11) ||
				       !strncmp(p, "libunwind.so", 12) ||
				       !strncmp(p, "libstdc++.so", 12) ||
				       !strncmp(p, "libc++abi.so", 12);

			if (runtime) {
				exempt++;
			} else {
				lines++;
				if (!names_its_source(p, n))
					fprintf(stderr, "default:%d has no '# <file>.cpp': %.*s\n",
						line, (int)n, p);
				CHECK(names_its_source(p, n));
			}
		}
		if (!nl)
			break;
		p = nl + 1;
		line++;
	}
	CHECK_EQ_INT(lines, 40);
	CHECK_EQ_INT(exempt, 6);
	/* the check itself: a comment that names no .cpp file, or none at all, fails */
	CHECK(source_named("a b\t# spyre_stream.cpp (JobPlan)"));
	CHECK(source_named("a b\t# distributed/spyre_ccl.cpp"));
	CHECK(!source_named("a b\t# flex's"));
	CHECK(!source_named("a b name=x"));
	CHECK(!source_named("a b\t# spyre_stream.cppx"));
	CHECK(!source_named("a b name=a#b"));
	CHECK(!source_named("a b\t# .cpp"));
}

/* The mock-only table: what tests trace in the mock that no public source does. */
TEST(probes_mock_table)
{
	struct probe_table t = {};
	const struct probe_spec *s;
	char err[256];

	CHECK_EQ_INT(probes_parse_file(&t, "tests/progs/mock-spyre/mock.probes", err, sizeof(err)),
		     0);
	CHECK_EQ_INT(t.cnt, 1);
	s = find_sym(&t, "flex::RuntimeStream::~RuntimeStream");
	CHECK(s);
	if (s) {
		CHECK_STR(s->name, "aiuStreamDestroy");
		CHECK_EQ_INT(s->dev, DEV_DESTROY);
		CHECK_EQ_INT(s->stream, 1);
	}
	probes_free(&t);
}

TEST(probes_defaults_and_syntax)
{
	struct probe_table t = {};
	char err[256];
	const char *text =
		"# comment line\n"
		"\n"
		"   \t  \n"
		"  libfoo.so\tfoo   # name=ignored\n"
		"libfoo.so bar name=a#b cat=mycat type=span arg2=x:d arg1=y ret=z:x\r\n"
		"libfoo.so baz arg6=last\n"
		"  # indented comment\n"
		"libfoo.so qux type=instant";	/* no final newline */

	CHECK_EQ_INT(probes_parse_text(&t, text, "t.probes", err, sizeof(err)), 0);
	CHECK_STR(err, "");
	CHECK_EQ_INT(t.cnt, 4);
	if (t.cnt != 4)
		goto out;
	CHECK_STR(t.specs[0].lib, "libfoo.so");
	CHECK_STR(t.specs[0].sym, "foo");
	CHECK_STR(t.specs[0].name, "");
	CHECK_STR(t.specs[0].cat, "privateuse1_runtime");
	CHECK_EQ_INT(t.specs[0].type, PROBE_SPAN);
	CHECK_EQ_INT(t.specs[0].nargs, 0);
	CHECK_EQ_INT(t.specs[0].dev, DEV_NONE);
	CHECK_EQ_INT(t.specs[0].op, OP_NONE);
	CHECK_STR(t.specs[0].origin, "t.probes:4");

	CHECK_STR(t.specs[1].name, "a#b");
	CHECK_STR(t.specs[1].cat, "mycat");
	CHECK_EQ_INT(t.specs[1].nargs, 3);
	/* order of appearance, then ret */
	CHECK_STR(t.specs[1].args[0].label, "x");
	CHECK_EQ_INT(t.specs[1].args[0].src, 2);
	CHECK_EQ_INT(t.specs[1].args[0].fmt, ARG_SIGNED);
	CHECK_STR(t.specs[1].args[1].label, "y");
	CHECK_EQ_INT(t.specs[1].args[1].fmt, ARG_HEX);
	CHECK_EQ_INT(t.specs[1].args[2].src, PROBE_VAL_RET);
	CHECK_STR(t.specs[1].args[2].label, "z");

	CHECK_EQ_INT(t.specs[2].args[0].src, 6);
	CHECK_EQ_INT(t.specs[3].type, PROBE_INSTANT);
	CHECK_STR(t.specs[3].origin, "t.probes:8");
out:
	probes_free(&t);
}

TEST(probes_field_limits)
{
	struct probe_table t = {};
	char err[256], text[1024], big[300];

	/* exactly the field size minus the NUL fits; one more is an error, never truncated */
	memset(big, 'n', 95);
	big[95] = '\0';
	snprintf(text, sizeof(text), "l s name=%s\n", big);
	CHECK_EQ_INT(probes_parse_text(&t, text, "o", err, sizeof(err)), 0);
	CHECK_EQ_INT(t.cnt, 1);
	CHECK_EQ_INT(strlen(t.specs[0].name), 95);
	snprintf(text, sizeof(text), "l s name=%sn\n", big);
	CHECK_EQ_INT(probes_parse_text(&t, text, "o", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "o:1: name is too long"));

	memset(big, 'a', 31);
	big[31] = '\0';
	snprintf(text, sizeof(text), "l s arg1=%s\n", big);
	CHECK_EQ_INT(probes_parse_text(&t, text, "o", err, sizeof(err)), 0);
	snprintf(text, sizeof(text), "l s arg1=%sa\n", big);
	CHECK_EQ_INT(probes_parse_text(&t, text, "o", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "label is too long"));

	memset(big, 'c', 48);
	big[48] = '\0';
	snprintf(text, sizeof(text), "l s cat=%s\n", big);
	CHECK_EQ_INT(probes_parse_text(&t, text, "o", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "cat is too long"));

	/* a path fits as LIB: 255 bytes */
	memset(big, 'l', 256);
	big[256] = '\0';
	snprintf(text, sizeof(text), "%s s\n", big);
	CHECK_EQ_INT(probes_parse_text(&t, text, "o", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "LIB_GLOB is too long"));
	snprintf(text, sizeof(text), "%.255s s\n", big);
	CHECK_EQ_INT(probes_parse_text(&t, text, "o", err, sizeof(err)), 0);

	memset(big, 's', 256);
	big[256] = '\0';
	snprintf(text, sizeof(text), "l %s\n", big);
	CHECK_EQ_INT(probes_parse_text(&t, text, "o", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "SYMBOL_GLOB is too long"));
	CHECK_EQ_INT(t.cnt, 3);
	probes_free(&t);
}

/* Each bad line is line 3, after two good ones: the error names line 3, nothing is added. */
TEST(probes_errors)
{
	static const struct {
		const char *line;
		const char *msg;	/* expected in the error text */
	} cases[] = {
		{ "l s foo=1", "unknown key 'foo'" },
		{ "l s argx=a", "unknown key 'argx'" },
		{ "l s nameX=a", "unknown key" },
		{ "l s justaword", "expected key=value" },
		{ "l s arg0=a", "argument index must be 1..6" },
		{ "l s arg7=a", "argument index must be 1..6" },
		{ "l s arg12=a", "argument index must be 1..6" },
		{ "l s arg1=a arg2=b arg3=c arg4=d arg5=e arg6=f arg7=g", "must be 1..6" },
		{ "l s arg1=a:q", "unknown format 'q'" },
		{ "l s arg1=a:", "unknown format ''" },
		{ "l s arg1=a:xx", "unknown format" },
		{ "l s ret=r:s", "unknown format" },
		{ "l s arg1=:x", "empty label" },
		{ "l s arg1=a\"b", "label" },
		{ "l s arg1=a/b", "may only contain" },
		{ "l s arg1=a arg2=a", "duplicate label 'a'" },
		{ "l s arg1=a ret=a", "duplicate label 'a'" },
		{ "l s name=a name=b", "duplicate key 'name'" },
		{ "l s arg1=a arg1=b", "duplicate key 'arg1'" },
		{ "l s type=span type=span", "duplicate key 'type'" },
		{ "libonly.so", "missing SYMBOL_GLOB" },
		{ "  libonly.so   # s", "missing SYMBOL_GLOB" },
		{ "l s name=", "empty value" },
		{ "l s type=both", "expected span, instant, unwind or catch" },
		{ "l s type=unwind arg1=a", "type=unwind probe: it records nothing" },
		{ "l s ret=r type=unwind", "type=unwind probe: it records nothing" },
		{ "l s type=unwind dev=complete key=arg1", "type=unwind probe: it records nothing" },
		{ "l s ret=r type=instant", "ret= on a type=instant" },
		{ "l s type=instant ret=r", "ret= on a type=instant" },
		{ "l s type=instant dev=complete key=ret", "key=ret on a type=instant" },
		{ "l s dev=complete stream=arg1", "dev=complete needs key=" },
		{ "l s op=h2d key=arg1", "op= needs dev=launch" },
		{ "l s dev=complete key=arg1 op=d2h", "op= needs dev=launch" },
		{ "l s dev=start key=arg1", "expected launch, complete, destroy, submit, sync" },
		{ "l s dev=submit key=arg1", "key= needs dev=launch or dev=complete" },
		{ "l s dev=submit stream=arg1", "stream= needs dev=launch, dev=complete, dev=destroy" },
		{ "l s dev=destroy", "dev=destroy needs stream=" },
		{ "l s dev=destroy stream=arg1 key=arg2", "key= needs dev=launch or dev=complete" },
		{ "l s dev=launch key=arg1 op=copy", "expected compute, h2d or d2h" },
		{ "l s dev=launch key=arg9", "argument index must be 1..6" },
		{ "l s dev=launch key=foo", "expected argN or ret" },
		{ "l s dev=launch key=ret stream=ret", "stream=ret: expected argN" },
		{ "l s dev=launch key=ret bytes=ret", "bytes=ret: expected argN" },
		{ "l s key=arg1", "key= needs dev=" },
		{ "l s stream=arg1", "stream= needs dev=" },
		{ "l s dev=complete key=arg1 bytes=arg2", "bytes= needs dev=launch" },
		{ "l s name=a\"b", "name: character '\"' not allowed" },
		{ "l s name=a\\b", "name: character '\\' not allowed" },
		{ "l s name=a\x01z", "control character 0x01" },
		{ "l s cat=a\"b", "cat: character '\"'" },
		{ "l s name=\xc3(", "invalid UTF-8" },
		{ "l s name=\xc0\xaf", "invalid UTF-8" },
		{ "l s\x1b[31m", "SYMBOL_GLOB: control character 0x1b" },
		{ "l\x7f s", "LIB_GLOB: control character 0x7f" },
		/* dereferences, str=, dev=sync/query/kname, dist= */
		{ "l s dev=launch key=arg2[4096]", "offset must be 0..4095" },
		{ "l s dev=launch key=arg2[0x1000]", "offset must be 0..4095" },
		{ "l s dev=launch key=arg2[]", "offset must be 0..4095" },
		{ "l s dev=launch key=arg2[0x]", "offset must be 0..4095" },
		{ "l s dev=launch key=arg2[-1]", "offset must be 0..4095" },
		{ "l s dev=launch key=arg2[8", "expected BASE[OFF]" },
		{ "l s dev=launch key=arg2[8]x", "expected BASE[OFF]" },
		{ "l s dev=launch key=arg7[8]", "argN[OFF], ret[OFF] or sret[OFF]" },
		{ "l s dev=launch key=rax[8]", "argN[OFF], ret[OFF] or sret[OFF]" },
		{ "l s dev=launch key=arg1[0] stream=arg1[8] bytes=arg1[16]", "more than 2 deref" },
		{ "l s arg1[0]=a arg1[8]=b ret[0]=c", "more than 2 deref" },
		{ "l s type=instant dev=complete key=ret[8]", "ret[8] on a type=instant" },
		{ "l s type=instant sret[0]=x", "sret[0] on a type=instant" },
		{ "l s arg1[0]=a arg2=a", "duplicate label 'a'" },
		{ "l s arg1[0]=a arg1[0x0]=b", "duplicate key 'arg1[0x0]'" },
		{ "l s arg1[0]=", "empty value" },
		{ "l s arg1[0]=a:q", "unknown format 'q'" },
		{ "l s mem=free ptr=arg1[0]", "mem=free with a dereference" },
		{ "l s str=ret", "str=ret: expected argN" },
		{ "l s str=arg1:s", "expected argN (std::string *) or argN:c" },
		{ "l s str=arg9", "expected argN" },
		{ "l s str=arg1 str=arg2", "duplicate key 'str'" },
		{ "l s type=unwind str=arg1", "type=unwind probe" },
		{ "l s type=catch arg1=a", "type=catch probe: it records nothing" },
		{ "l s type=catch dist=rank ret=r:i", "type=catch probe: it records nothing" },
		{ "l s type=catch mem=free ptr=arg1", "mem= on a type=catch probe" },
		{ "l s type=throw", "expected span, instant, unwind or catch" },
		{ "l s dev=kname", "dev=kname needs str=" },
		{ "l s dev=kname str=arg1 stream=arg2", "stream= needs dev=launch" },
		{ "l s dev=sync", "dev=sync needs stream=" },
		{ "l s dev=query", "dev=query needs stream=" },
		{ "l s dev=query stream=arg1 type=instant", "need a span" },
		{ "l s dev=sync stream=arg1 key=arg2", "key= needs dev=launch or dev=complete" },
		{ "l s dev=sync stream=arg1 op=compute", "op= needs dev=launch" },
		{ "l s dev=query stream=arg1 bytes=arg2", "bytes= needs dev=launch" },
		{ "l s dist=world", "dist=world: expected rank or size" },
		{ "l s dist=rank type=instant", "dist= needs a span" },
		{ "l s dist=rank dev=sync stream=arg1", "dist= needs a span" },
		/* py= */
		{ "l s py=2", "py=2: expected 1 or 0" },
		{ "l s py=yes", "py=yes: expected 1 or 0" },
		{ "l s type=instant py=1", "py=1 needs a span" },
		{ "l s py=1 py=0", "duplicate key 'py'" },
	};
	struct probe_table t = {};
	char text[512], err[256], want[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "good.so a\n# x\n%s\ngood.so b\n", cases[i].line);
		err[0] = '\0';
		int ret = probes_parse_text(&t, text, "f.probes", err, sizeof(err));

		if (ret != -EINVAL || !strstr(err, "f.probes:3: ") || !strstr(err, cases[i].msg)) {
			char m[512];

			snprintf(m, sizeof(m), "case %zu '%s': ret %d err '%s', want '%s'", i,
				 cases[i].line, ret, err, cases[i].msg);
			unit_fail(__FILE__, __LINE__, m);
		}
		CHECK_EQ_INT(t.cnt, 0);
	}

	/* a failing text leaves what was there before the call, and nothing of its own */
	CHECK_EQ_INT(probes_parse_text(&t, "a.so x\n", "ok", err, sizeof(err)), 0);
	CHECK_EQ_INT(probes_parse_text(&t, "b.so y\nb.so z\nb.so w bad=1\n", "bad", err,
				       sizeof(err)), -EINVAL);
	CHECK_EQ_INT(t.cnt, 1);
	CHECK_STR(t.specs[0].lib, "a.so");
	snprintf(want, sizeof(want), "bad:3: unknown key 'bad'");
	CHECK_STR(err, want);

	/* NULL or tiny error buffers are fine */
	CHECK_EQ_INT(probes_parse_text(&t, "l s foo=1\n", "x", NULL, 0), -EINVAL);
	CHECK_EQ_INT(probes_parse_text(&t, "l s foo=1\n", "x", err, 4), -EINVAL);
	CHECK_STR(err, "x:1");
	probes_free(&t);
}

TEST(probes_growth)
{
	struct probe_table t = {};
	char *text = malloc(100 * 32), *p = text, err[128];

	CHECK(text);
	if (!text)
		return;
	for (int i = 0; i < 100; i++)
		p += sprintf(p, "lib%d.so sym%d\n", i, i);
	CHECK_EQ_INT(probes_parse_text(&t, text, "g", err, sizeof(err)), 0);
	CHECK_EQ_INT(t.cnt, 100);
	CHECK(t.cap >= 100);
	CHECK_STR(t.specs[0].sym, "sym0");
	CHECK_STR(t.specs[99].lib, "lib99.so");
	CHECK_STR(t.specs[99].origin, "g:100");
	free(text);
	probes_free(&t);
}

TEST(probes_cli)
{
	struct probe_table t = {};
	char err[256];

	CHECK_EQ_INT(probes_parse_cli(&t, "libflex.so:flex::RuntimeStream::synchronize*:mySync",
				      err, sizeof(err)), 0);
	CHECK_STR(err, "");
	CHECK_EQ_INT(probes_parse_cli(&t, "libfoo.so:foo", err, sizeof(err)), 0);
	CHECK_EQ_INT(probes_parse_cli(&t, "libfoo.so:ns::foo::", err, sizeof(err)), 0);
	CHECK_EQ_INT(probes_parse_cli(&t, "libfoo.so:a:b::c", err, sizeof(err)), 0);
	CHECK_EQ_INT(t.cnt, 4);
	if (t.cnt == 4) {
		CHECK_STR(t.specs[0].lib, "libflex.so");
		CHECK_STR(t.specs[0].sym, "flex::RuntimeStream::synchronize*");
		CHECK_STR(t.specs[0].name, "mySync");
		CHECK_STR(t.specs[0].origin, "--probe");
		CHECK_STR(t.specs[0].cat, "privateuse1_runtime");
		CHECK_EQ_INT(t.specs[0].type, PROBE_SPAN);
		CHECK_EQ_INT(t.specs[0].nargs, 0);
		CHECK_STR(t.specs[1].lib, "libfoo.so");
		CHECK_STR(t.specs[1].sym, "foo");
		CHECK_STR(t.specs[1].name, "");
		CHECK_STR(t.specs[2].sym, "ns::foo::");
		CHECK_STR(t.specs[3].sym, "a");
		CHECK_STR(t.specs[3].name, "b::c");
	}

	static const struct {
		const char *arg, *msg;
	} bad[] = {
		{ ":foo", "empty LIB" },
		{ "libfoo.so:", "empty SYMBOL_GLOB" },
		{ "libfoo.so::foo", "expected LIB:SYMBOL_GLOB" },
		{ "libfoo.so", "expected LIB:SYMBOL_GLOB" },
		{ "", "expected LIB:SYMBOL_GLOB" },
		{ "libfoo.so:::foo", "ambiguous" },
		{ "libfoo.so:foo:::bar", "ambiguous" },
		{ "libfoo.so:foo:name:extra", "too many fields" },
		{ "libfoo.so:foo:", "empty NAME" },
		{ "lib::x.so:foo", "LIB cannot contain ':'" },
		{ "libfoo.so:foo:a\"b", "NAME: character '\"'" },
		{ "libfoo.so:fo\no", "control character 0x0a" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		int ret = probes_parse_cli(&t, bad[i].arg, err, sizeof(err));

		if (ret != -EINVAL || strncmp(err, "--probe: ", 9) || !strstr(err, bad[i].msg)) {
			char m[512];

			snprintf(m, sizeof(m), "cli case %zu '%s': ret %d err '%s', want '%s'", i,
				 bad[i].arg, ret, err, bad[i].msg);
			unit_fail(__FILE__, __LINE__, m);
		}
	}
	CHECK_EQ_INT(t.cnt, 4);
	probes_free(&t);
}

/* perf's and bpftrace's spellings: uprobe:LIB:SYM, u:LIB:SYM, and LIB as the file's path */
TEST(probes_cli_uprobe_prefix_and_paths)
{
	char dir[] = "/tmp/test_probes_pathXXXXXX", lib[160], odd[200], cwd[4096];
	struct probe_table t = {};
	char err[256];
	FILE *f;

	CHECK_EQ_INT(probes_parse_cli(&t, "uprobe:/opt/x/libflex.so:flex::getNumDevices", err,
				      sizeof(err)), 0);
	CHECK_EQ_INT(probes_parse_cli(&t, "u:libflex.so:flex::getNumDevices:gnd", err,
				      sizeof(err)), 0);
	/* without a LIB:SYMBOL after it, "uprobe" is the LIB ("uprobe::x" a C++ name) */
	CHECK_EQ_INT(probes_parse_cli(&t, "uprobe:uprobe::x", err, sizeof(err)), 0);
	CHECK_EQ_INT(t.cnt, 3);
	if (t.cnt == 3) {
		/* a path that does not exist stays as given: it resolves nowhere, said so */
		CHECK_STR(t.specs[0].lib, "/opt/x/libflex.so");
		CHECK_STR(t.specs[0].sym, "flex::getNumDevices");
		CHECK_STR(t.specs[1].lib, "libflex.so");
		CHECK_STR(t.specs[1].name, "gnd");
		CHECK_STR(t.specs[2].lib, "uprobe");
		CHECK_STR(t.specs[2].sym, "uprobe::x");
	}
	probes_free(&t);

	/* an existing file's path as the maps give it: canonical, whatever the spelling */
	CHECK(mkdtemp(dir) && getcwd(cwd, sizeof(cwd)));
	snprintf(lib, sizeof(lib), "%s/libx.so", dir);
	f = fopen(lib, "w");
	CHECK(f);
	if (f)
		fclose(f);
	snprintf(odd, sizeof(odd), "%s/./../%s/libx.so:foo", dir, strrchr(dir, '/') + 1);
	CHECK_EQ_INT(probes_parse_cli(&t, odd, err, sizeof(err)), 0);
	CHECK(!chdir(dir));
	CHECK_EQ_INT(probes_parse_cli(&t, "uprobe:./libx.so:foo", err, sizeof(err)), 0);
	/* a glob is the user's: not touched */
	CHECK_EQ_INT(probes_parse_cli(&t, "./libx*.so:foo", err, sizeof(err)), 0);
	CHECK_EQ_INT(t.cnt, 3);
	if (t.cnt == 3) {
		CHECK_STR(t.specs[0].lib, lib);
		CHECK_STR(t.specs[1].lib, lib);
		CHECK_STR(t.specs[2].lib, "./libx*.so");
	}
	CHECK(!chdir(cwd));
	unlink(lib);
	rmdir(dir);
	probes_free(&t);
}

TEST(probes_file)
{
	struct probe_table t = {};
	char path[] = "/tmp/test-probes-XXXXXX", err[160], want[160];
	const char *text = "libx.so x::y name=xy arg1=a:u\n\nlibx.so x::z bogus\n";
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK_EQ_INT(write(fd, text, 30), 30);	/* first line only */
	CHECK_EQ_INT(probes_parse_file(&t, path, err, sizeof(err)), 0);
	CHECK_EQ_INT(t.cnt, 1);
	if (t.cnt == 1) {
		CHECK_STR(t.specs[0].sym, "x::y");
		CHECK_STR(t.specs[0].name, "xy");
		CHECK_EQ_INT(t.specs[0].args[0].fmt, ARG_UNSIGNED);
		snprintf(want, sizeof(want), "%s:1", path);
		CHECK_STR(t.specs[0].origin, want);
	}
	/* the bad line is reported with the path and its line */
	CHECK_EQ_INT(write(fd, text + 30, strlen(text) - 30), (long)strlen(text) - 30);
	CHECK_EQ_INT(probes_parse_file(&t, path, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "%s:3: 'bogus': expected key=value", path);
	CHECK_STR(err, want);
	CHECK_EQ_INT(t.cnt, 1);

	/* NUL bytes are refused */
	CHECK_EQ_INT(ftruncate(fd, 0), 0);
	CHECK_EQ_INT(pwrite(fd, "l s\0x\n", 6, 0), 6);
	CHECK_EQ_INT(probes_parse_file(&t, path, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "NUL byte"));

	/* exactly the limit is fine, one byte more is not */
	CHECK_EQ_INT(ftruncate(fd, 0), 0);
	char *big = malloc(PROBES_FILE_MAX + 1);

	CHECK(big);
	if (big) {
		memset(big, ' ', PROBES_FILE_MAX + 1);
		memcpy(big, "l s\n", 4);
		big[PROBES_FILE_MAX - 1] = '\n';
		CHECK_EQ_INT(pwrite(fd, big, PROBES_FILE_MAX, 0), PROBES_FILE_MAX);
		CHECK_EQ_INT(probes_parse_file(&t, path, err, sizeof(err)), 0);
		CHECK_EQ_INT(t.cnt, 2);
		CHECK_EQ_INT(pwrite(fd, " ", 1, PROBES_FILE_MAX), 1);
		CHECK_EQ_INT(probes_parse_file(&t, path, err, sizeof(err)), -EFBIG);
		CHECK(strstr(err, "larger than"));
		CHECK_EQ_INT(t.cnt, 2);
		free(big);
	}
	close(fd);
	unlink(path);

	/* a file that is not there */
	CHECK_EQ_INT(probes_parse_file(&t, path, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "%s: cannot open: No such file or directory", path);
	CHECK_STR(err, want);
	/* a directory */
	CHECK_EQ_INT(probes_parse_file(&t, "/tmp", err, sizeof(err)), -EISDIR);
	CHECK(strstr(err, "/tmp: "));
	CHECK_EQ_INT(t.cnt, 2);
	probes_free(&t);
}

TEST(probes_long_origin)
{
	struct probe_table t = {};
	char origin[200], err[512];

	memset(origin, 'd', sizeof(origin) - 1);
	origin[sizeof(origin) - 1] = '\0';
	memcpy(origin + sizeof(origin) - 8, "/x.prb", 7);
	CHECK_EQ_INT(probes_parse_text(&t, "\nl s\n", origin, err, sizeof(err)), 0);
	CHECK_EQ_INT(t.cnt, 1);
	if (t.cnt == 1) {
		/* the tail of the path and the line survive */
		CHECK_EQ_INT(strlen(t.specs[0].origin), sizeof(t.specs[0].origin) - 1);
		CHECK(!strncmp(t.specs[0].origin, "...", 3));
		CHECK(strstr(t.specs[0].origin, "/x.prb:2"));
	}
	probes_free(&t);
}

TEST(probes_display_name)
{
	struct probe_table t = {};
	struct globcap caps;
	const char *q = "at::_ops::addmm::call";
	char err[256], *n;

	CHECK_EQ_INT(probes_parse_text(&t,
		"lib.so at::_ops::*::call name=aten::{1}\n"
		"lib.so ns::*::*_impl name={2}@{1}\n"
		"lib.so ns::* name={{{1}}}\n"
		"lib.so ns::*\n"
		"lib.so flex::x name=mySync\n", "t", err, sizeof(err)), 0);
	CHECK_STR(err, "");
	CHECK(globcap_match(t.specs[0].sym, q, &caps));
	n = probe_name(&t.specs[0], q, q, &caps);
	CHECK_STR(n, "aten::addmm");
	free(n);
	CHECK(globcap_match(t.specs[1].sym, "ns::A::run_impl", &caps));
	n = probe_name(&t.specs[1], "ns::A::run_impl", "ns::A::run_impl", &caps);
	CHECK_STR(n, "run@A");
	free(n);
	CHECK(globcap_match(t.specs[2].sym, "ns::f", &caps));
	n = probe_name(&t.specs[2], "ns::f", "ns::f", &caps);
	CHECK_STR(n, "{f}");
	free(n);
	/* a template whose captures are all empty: the function's own name */
	CHECK(globcap_match(t.specs[1].sym, "ns::::_impl", &caps));
	n = probe_name(&t.specs[1], "ns::::_impl", "ns::::_impl", &caps);
	CHECK_STR(n, "@");
	free(n);
	/* no name=: the qualified name, whole (it used to be the last component: "call") */
	n = probe_name(&t.specs[3], "ns::Foo<a::b>::bar<int, c::d>", NULL, NULL);
	CHECK_STR(n, "ns::Foo<a::b>::bar<int, c::d>");
	free(n);
	n = probe_name(&t.specs[3], "", NULL, NULL);
	CHECK_STR(n, "ns::*");
	free(n);
	n = probe_name(&t.specs[4], "flex::x", "flex::x", NULL);
	CHECK_STR(n, "mySync");
	free(n);
	probes_free(&t);
}

TEST(probes_name_templates_checked)
{
	static const struct {
		const char *line, *msg;
	} bad[] = {
		{ "l at::_ops::*::call name=aten::{2}",
		  "t:1: name=aten::{2}: {2} but SYMBOL_GLOB 'at::_ops::*::call' has 1 '*'" },
		{ "l flex::x name={1}", "t:1: name={1}: {1} but SYMBOL_GLOB 'flex::x' has 0 '*'" },
		{ "l a* name={17}", "{17} but SYMBOL_GLOB 'a*' has 1 '*' (at most 16" },
		{ "l a* name={0}", "a brace that is not part of {N}" },
		{ "l a* name=x{1", "a brace that is not part of {N}" },
		{ "l a* name=x}", "a brace that is not part of {N}" },
		{ "l a* name={a}", "a brace that is not part of {N}" },
		{ "l a[b* name=x", "t:1: SYMBOL_GLOB 'a[b*': '[' without its closing ']'" },
		{ "l a\\ name=x", "trailing" },
	};
	struct probe_table t = {};
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ_INT(probes_parse_text(&t, bad[i].line, "t", err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].msg))
			unit_fail(__FILE__, __LINE__, err);
	}
	CHECK_EQ_INT(t.cnt, 0);
	/* the command line takes templates too, checked the same way */
	CHECK_EQ_INT(probes_parse_cli(&t, "libtorch_cpu.so*:at::_ops::*::call:aten::{1}", err,
				      sizeof(err)), 0);
	CHECK(t.cnt == 1 && !strcmp(t.specs[0].name, "aten::{1}"));
	CHECK_EQ_INT(probes_parse_cli(&t, "lib:at::_ops::*::call:aten::{2}", err, sizeof(err)),
		     -EINVAL);
	CHECK(strstr(err, "--probe: name=aten::{2}: {2} but SYMBOL_GLOB"));
	/* longer than the name field: an error, never cut */
	CHECK_EQ_INT(probes_parse_cli(&t, "lib:a*:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", err,
				      sizeof(err)), -EINVAL);
	CHECK(strstr(err, "NAME is too long"));
	probes_free(&t);
}

TEST(probes_builtin_tables)
{
	struct probe_table t = {};
	char err[256], dir[] = "/tmp/spyre-probes-XXXXXX", cwd[4096];
	int n;
	FILE *f;

	CHECK(probes_builtin("torch") && probes_builtin("spyre") && !probes_builtin("nope"));
	CHECK_EQ_INT(probes_load(&t, "torch", err, sizeof(err)), 0);
	CHECK(t.cnt >= 4);
	CHECK_STR(t.specs[0].sym, "at::_ops::*::call");
	CHECK_STR(t.specs[0].name, "aten::{1}");
	CHECK_STR(t.specs[0].cat, "cpu_op");
	CHECK(!strncmp(t.specs[0].origin, "torch:", 6));
	probes_free(&t);
	/* "spyre" is the default table */
	CHECK_EQ_INT(probes_load_default(&t, err, sizeof(err)), 0);
	n = t.cnt;
	probes_free(&t);
	CHECK_EQ_INT(probes_load(&t, "spyre", err, sizeof(err)), 0);
	CHECK_EQ_INT(t.cnt, n);
	CHECK(n > 20);
	probes_free(&t);
	/* a name that is neither: says which names there are */
	CHECK_EQ_INT(probes_load(&t, "torhc", err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "torhc: no such file, nor a built-in table (spyre, torch); did you mean "
		     "torch?"));
	/* nothing near: no guess */
	CHECK_EQ_INT(probes_load(&t, "xyzzy", err, sizeof(err)), -EINVAL);
	CHECK(!strstr(err, "did you mean"));
	/* the built-in name wins over a file of that name in the current directory; ./torch is
	 * the file, and a name without '/' that is no table is a file */
	CHECK(mkdtemp(dir) && getcwd(cwd, sizeof(cwd)) && !chdir(dir));
	f = fopen("torch", "w");
	CHECK(f);
	if (f) {
		fputs("lib.so mine\n", f);
		fclose(f);
	}
	CHECK(!link("torch", "mytable"));
	CHECK_EQ_INT(probes_load(&t, "torch", err, sizeof(err)), 0);
	CHECK(t.cnt >= 4);
	probes_free(&t);
	CHECK_EQ_INT(probes_load(&t, "./torch", err, sizeof(err)), 0);
	CHECK(t.cnt == 1 && !strcmp(t.specs[0].sym, "mine"));
	probes_free(&t);
	CHECK_EQ_INT(probes_load(&t, "mytable", err, sizeof(err)), 0);
	CHECK(t.cnt == 1 && !strcmp(t.specs[0].sym, "mine"));
	probes_free(&t);
	unlink("torch");
	unlink("mytable");
	CHECK(!chdir(cwd) && !rmdir(dir));
}

/* Random lines from the grammar's alphabet: any outcome but a crash or a bad error text. */
TEST(probes_dereferences_share_slots_and_keep_their_offsets)
{
	struct probe_table t = {};
	const struct probe_spec *s;
	char err[256];

	const char *text =
		"f.so launchD2H dev=launch op=d2h key=arg2[24] stream=arg1 bytes=arg2[0x8]\n"
		"f.so alloc mem=alloc ptr=sret[0] size=arg3 arg2[24]=dup sret[0]=first:u\n"
		"f.so get ret[4095]=v:i type=span\n"
		"f.so cb type=instant dev=complete key=arg1[0]\n";

	CHECK_EQ_INT(probes_parse_text(&t, text, "d", err, sizeof(err)), 0);
	CHECK_STR(err, "");
	CHECK_EQ_INT(t.cnt, 4);
	s = &t.specs[0];
	CHECK_EQ_INT(s->nderef, 2);
	CHECK_EQ_INT(s->deref[0].src, 2);
	CHECK_EQ_INT(s->deref[0].off, 24);
	CHECK_EQ_INT(s->deref[1].src, 2);
	CHECK_EQ_INT(s->deref[1].off, 8);
	CHECK_EQ_INT(s->key, PROBE_VAL_DEREF);
	CHECK_EQ_INT(s->bytes, PROBE_VAL_DEREF + 1);
	CHECK_EQ_INT(s->stream, 1);
	s = &t.specs[1];
	/* sret[0] twice is one read; arg2[24] the second */
	CHECK_EQ_INT(s->nderef, 2);
	CHECK_EQ_INT(s->deref[0].src, PROBE_VAL_SRET);
	CHECK_EQ_INT(s->deref[0].off, 0);
	CHECK_EQ_INT(s->ptr, PROBE_VAL_DEREF);
	CHECK_EQ_INT(s->nargs, 2);
	CHECK_STR(s->args[0].label, "dup");
	CHECK_EQ_INT(s->args[0].src, PROBE_VAL_DEREF + 1);
	CHECK_STR(s->args[1].label, "first");
	CHECK_EQ_INT(s->args[1].src, PROBE_VAL_DEREF);
	CHECK_EQ_INT(s->args[1].fmt, ARG_UNSIGNED);
	s = &t.specs[2];
	CHECK_EQ_INT(s->deref[0].src, PROBE_VAL_RET);
	CHECK_EQ_INT(s->deref[0].off, 4095);
	CHECK_EQ_INT(s->args[0].fmt, ARG_INT32);
	s = &t.specs[3];
	CHECK_EQ_INT(s->key, PROBE_VAL_DEREF);
	CHECK_EQ_INT(s->deref[0].src, 1);
	/* every label at once: two dereferences, six arguments and ret fill args[] */
	CHECK_EQ_INT(probes_parse_text(&t, "f.so all arg1[0]=d0 ret[8]=d1 arg1=a1 arg2=a2 arg3=a3 "
				       "arg4=a4 arg5=a5 arg6=a6 ret=r\n", "d", err, sizeof(err)), 0);
	CHECK_STR(err, "");
	s = &t.specs[4];
	CHECK_EQ_INT(s->nargs, PROBE_MAX_LABELS);
	CHECK_STR(s->args[1].label, "d1");
	CHECK_EQ_INT(s->args[1].src, PROBE_VAL_DEREF + 1);
	CHECK_STR(s->args[7].label, "a6");
	CHECK_STR(s->args[8].label, "r");
	CHECK_EQ_INT(s->args[8].src, PROBE_VAL_RET);
	probes_free(&t);
}

TEST(probes_string_stream_and_dist_keys)
{
	struct probe_table t = {};
	const struct probe_spec *s;
	char err[256];

	const char *text =
		"f.so createComputeParams dev=kname str=arg3\n"
		"f.so named str=arg1:c\n"
		"f.so synchronize dev=sync stream=arg1\n"
		"f.so query dev=query stream=arg1\n"
		"f.so launchCompute dev=launch op=compute stream=arg1\n"
		"c.so getRank dist=rank\n"
		"c.so getSize dist=size\n";

	CHECK_EQ_INT(probes_parse_text(&t, text, "s", err, sizeof(err)), 0);
	CHECK_STR(err, "");
	CHECK_EQ_INT(t.cnt, 7);
	CHECK_EQ_INT(t.specs[0].dev, DEV_KNAME);
	CHECK_EQ_INT(t.specs[0].str, STR_CXX);
	CHECK_EQ_INT(t.specs[0].str_arg, 3);
	CHECK_EQ_INT(t.specs[1].dev, DEV_NONE);
	CHECK_EQ_INT(t.specs[1].str, STR_C);
	CHECK_EQ_INT(t.specs[1].str_arg, 1);
	CHECK_EQ_INT(t.specs[2].dev, DEV_SYNC);
	CHECK_EQ_INT(t.specs[2].stream, 1);
	CHECK_EQ_INT(t.specs[3].dev, DEV_QUERY);
	s = &t.specs[4];
	/* a void launch has no key: sync, query or a later completion end it */
	CHECK_EQ_INT(s->dev, DEV_LAUNCH);
	CHECK_EQ_INT(s->key, PROBE_VAL_NONE);
	CHECK_EQ_INT(t.specs[5].dist, DIST_RANK);
	CHECK_EQ_INT(t.specs[6].dist, DIST_SIZE);
	probes_free(&t);
}

TEST(probes_random_input)
{
	static const char *const pieces[] = {
		"l", "s", " ", "\t", "\n", "#", "=", ":", "arg", "1", "7", "ret", "type", "instant",
		"dev", "launch", "complete", "key", "op", "h2d", "name", "x", "d", "\"", "\xc3",
		"stream", "bytes", "cat", "::", "\r", "[", "]", "0x", "sret", "str", ":c",
		"sync", "query", "kname", "dist", "rank",
	};
	struct probe_table t = {};
	char text[256], err[128];
	unsigned int seed = 12345;

	for (int iter = 0; iter < 20000; iter++) {
		size_t n = 0;
		int k = rand_r(&seed) % 24;

		while (k-- > 0) {
			int pi = rand_r(&seed) % (int)(sizeof(pieces) / sizeof(pieces[0]));
			const char *pc = pieces[pi];
			size_t l = strlen(pc);

			if (n + l >= sizeof(text))
				break;
			memcpy(text + n, pc, l);
			n += l;
		}
		text[n] = '\0';
		int cnt = t.cnt;
		int ret = probes_parse_text(&t, text, "r", err, sizeof(err));

		if (ret) {
			CHECK_EQ_INT(ret, -EINVAL);
			CHECK(!strncmp(err, "r:", 2));
			CHECK_EQ_INT(t.cnt, cnt);
		}
		probes_parse_cli(&t, text, err, sizeof(err));
	}
	for (int i = 0; i < t.cnt; i++) {
		const struct probe_spec *s = &t.specs[i];

		CHECK(s->nargs >= 0 && s->nargs <= PROBE_MAX_LABELS);
		CHECK(s->nderef >= 0 && s->nderef <= PROBE_MAX_DEREFS);
		CHECK(!(s->type == PROBE_INSTANT && s->nargs &&
			s->args[s->nargs - 1].src == PROBE_VAL_RET));
	}
	probes_free(&t);
}

/* Each word of a word-valued key (the keys[] table in probes.c) sets its own value. */
TEST(probes_key_words_each_set_their_value)
{
	static const struct {
		const char *opts;
		size_t off;
		int want;
	} cases[] = {
		{ "type=instant", offsetof(struct probe_spec, type), PROBE_INSTANT },
		{ "type=unwind", offsetof(struct probe_spec, type), PROBE_UNWIND },
		{ "type=catch", offsetof(struct probe_spec, type), PROBE_CATCH },
		{ "type=span", offsetof(struct probe_spec, type), PROBE_SPAN },
		{ "dev=submit", offsetof(struct probe_spec, dev), DEV_SUBMIT },
		{ "dev=destroy stream=arg1", offsetof(struct probe_spec, dev), DEV_DESTROY },
		{ "dev=sync stream=arg1", offsetof(struct probe_spec, dev), DEV_SYNC },
		{ "dev=query stream=arg1", offsetof(struct probe_spec, dev), DEV_QUERY },
		{ "dev=kname str=arg1", offsetof(struct probe_spec, dev), DEV_KNAME },
		{ "dev=launch op=h2d", offsetof(struct probe_spec, op), OP_H2D },
		{ "dev=launch op=d2h", offsetof(struct probe_spec, op), OP_D2H },
		{ "dev=launch op=compute", offsetof(struct probe_spec, op), OP_COMPUTE },
		{ "mem=alloc ptr=ret size=arg1", offsetof(struct probe_spec, mem), MEM_ALLOC },
		{ "mem=free ptr=arg1", offsetof(struct probe_spec, mem), MEM_FREE },
		{ "dist=rank", offsetof(struct probe_spec, dist), DIST_RANK },
		{ "dist=size", offsetof(struct probe_spec, dist), DIST_SIZE },
	};
	char line[128], err[256], m[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct probe_table t = {};
		int ret, got;

		snprintf(line, sizeof(line), "l s %s\n", cases[i].opts);
		ret = probes_parse_text(&t, line, "t", err, sizeof(err));
		got = ret ? -1 : *(const int *)((const char *)&t.specs[0] + cases[i].off);
		if (ret || got != cases[i].want) {
			snprintf(m, sizeof(m), "'%s': ret %d (%s), value %d, want %d", cases[i].opts,
				 ret, ret ? err : "", got, cases[i].want);
			unit_fail(__FILE__, __LINE__, m);
		}
		probes_free(&t);
	}
}

TEST(probes_py_key)
{
	struct probe_table t = {};
	char err[256] = "";

	CHECK_EQ_INT(probes_parse_text(&t, "l a py=1\nl b py=0\nl c\n", "t", err, sizeof(err)),
		     0);
	CHECK_STR(err, "");
	CHECK_EQ_INT(t.cnt, 3);
	CHECK_EQ_INT(t.specs[0].py, 1);
	CHECK_EQ_INT(t.specs[1].py, 0);
	CHECK_EQ_INT(t.specs[2].py, 0);
	probes_free(&t);
}
