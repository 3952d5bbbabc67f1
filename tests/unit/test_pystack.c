// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CPython's location table (co_linetable, one format in 3.11-3.13) decoded as stream/pystack.c
 * does, against what CPython itself says: the tables and lines below are the co_linetable and
 * co_lines() of each code object of a small module compiled by Debian bookworm's python3.11
 * (3.11.2), and by pyenv's 3.12.1 and 3.13.0: multi-line
 * expressions (lines going back), a comprehension, an exception handler (instructions with no
 * line), and a jump of 5,000 lines (the long form's varints).
 */
#include <errno.h>
#include <stdint.h>
#include "unit.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "resolve/pyrt.h"
#include "stream/pystack.h"
#include "stream/spyre_event_user.h"

/* lt_module (first line 1) */
static const uint8_t lt_module_tab[] = { 0xf0, 0x03, 0x01, 0x01, 0x01, 0xf0, 0x04, 0x0e, 0x01,
0x0f, 0xf0, 0x00, 0x0e, 0x01, 0x0f, 0xf0, 0x00, 0x0e, 0x01, 0x0f, 0xf0, 0x78, 0x09, 0x4b, 0x4e,
0x01, 0x01, 0x11, 0xf0, 0x00, 0x4b, 0x4e, 0x01, 0x01, 0x11, 0xf0, 0x00, 0x4b, 0x4e, 0x01, 0x01,
0x11, 0xf0, 0x00, 0x4b, 0x4e, 0x01, 0x01, 0x11, 0xf0, 0x00, 0x4b, 0x4e, 0x01, 0x01, 0x11 };
static const int lt_module_lines[] = { 0, 2, 2, 2, 318, 318, 318, 318, 318 };
/* lt_f (first line 2) */
static const uint8_t lt_f_tab[] = { 0x80, 0x00, 0xd8, 0x09, 0x0a, 0xd8, 0x09, 0x0a, 0xf1, 0x03,
0x01, 0x0a, 0x0b, 0x80, 0x41, 0xe0, 0x07, 0x08, 0x88, 0x31, 0x82, 0x75, 0x80, 0x75, 0xf0, 0x02,
0x01, 0x0d, 0x20, 0xf0, 0x00, 0x01, 0x0d, 0x20, 0xdd, 0x16, 0x1b, 0x98, 0x41, 0x91, 0x68, 0x94,
0x68, 0xf0, 0x03, 0x01, 0x0d, 0x20, 0xf1, 0x00, 0x01, 0x0d, 0x20, 0xf4, 0x00, 0x01, 0x0d, 0x20,
0x88, 0x01, 0x88, 0x01, 0xf0, 0x06, 0x00, 0x0d, 0x11, 0x88, 0x01, 0xf0, 0x02, 0x03, 0x05, 0x0e,
0xd8, 0x0c, 0x0d, 0x90, 0x01, 0x89, 0x45, 0x88, 0x01, 0x88, 0x01, 0xf8, 0xdd, 0x0b, 0x1c, 0xf0,
0x00, 0x01, 0x05, 0x0e, 0xf0, 0x00, 0x01, 0x05, 0x0e, 0xf0, 0x00, 0x01, 0x05, 0x0e, 0xd8, 0x0c,
0x0d, 0x88, 0x01, 0x88, 0x01, 0x88, 0x01, 0xf0, 0x03, 0x01, 0x05, 0x0e, 0xf8, 0xf8, 0xf8, 0xe0,
0x0c, 0x0d, 0xd8, 0x0c, 0x0d, 0xd8, 0x0c, 0x0d, 0xf0, 0x05, 0x02, 0x0c, 0x0f, 0xf0, 0x00, 0x02,
0x05, 0x0f };
static const int lt_f_lines[] = { 2, 3, 4, 3, 3, 3, 5, 5, 5, 5, 5, 5, 6, 6, 7, 7, 7, 7, 7, 7, 7,
7, 7, 7, 7, 7, 7, 7, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 9, 9, 10, 11, 11, 11, 11, 11, 11, -1, 12, 12,
12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 12, -1, -1, -1, 14, 15, 16, 14, 14 };
/* lt_listcomp (first line 6) */
static const uint8_t lt_listcomp_tab[] = { 0x80, 0x00, 0xf0, 0x00, 0x01, 0x0d, 0x20, 0xf0, 0x00,
0x01, 0x0d, 0x20, 0xf0, 0x00, 0x01, 0x0d, 0x20, 0xd8, 0x11, 0x12, 0xf0, 0x03, 0x00, 0x0e, 0x0f,
0x90, 0x11, 0x89, 0x55, 0xf0, 0x00, 0x01, 0x0d, 0x20, 0xf0, 0x00, 0x01, 0x0d, 0x20, 0xf0, 0x00,
0x01, 0x0d, 0x20 };
static const int lt_listcomp_lines[] = { 6, 6, 6, 6, 7, 6, 6, 6, 6, 6, 6, 6 };
/* lt_far (first line 318) */
static const uint8_t lt_far_tab[] = { 0x80, 0x00, 0xd8, 0x08, 0x09, 0x88, 0x41, 0x89, 0x05, 0x80,
0x41, 0xf0, 0x54, 0x5c, 0x02, 0x00, 0x0c, 0x0d, 0x88, 0x71, 0x89, 0x35, 0x80, 0x4c };
static const int lt_far_lines[] = { 318, 319, 319, 319, 319, 319, 5321, 5321, 5321, 5321, 5321 };

/* the same module under pyenv's 3.12.1 and 3.13.0 (3.12 inlines the comprehension) */
/* 3.12: lt_module (first line 1) */
static const uint8_t lt312_module_tab[] = { 0xf0, 0x03, 0x01, 0x01, 0x01, 0xf2, 0x04, 0x0e, 0x01,
0x0f, 0xf3, 0x78, 0x09, 0x4b, 0x4e, 0x01, 0x01, 0x11 };
static const int lt312_module_lines[] = { 0, 2, 2, 2, 318, 318, 318, 318 };
/* 3.12: lt_f (first line 2) */
static const uint8_t lt312_f_tab[] = { 0x80, 0x00, 0xd8, 0x09, 0x0a, 0xd8, 0x09, 0x0a, 0xf1, 0x03,
0x01, 0x0a, 0x0b, 0x80, 0x41, 0xe0, 0x07, 0x08, 0x88, 0x31, 0x82, 0x75, 0xe4, 0x16, 0x1b, 0x98,
0x41, 0x93, 0x68, 0xf6, 0x03, 0x01, 0x0d, 0x20, 0xd8, 0x11, 0x12, 0xf0, 0x03, 0x00, 0x0e, 0x0f,
0x90, 0x11, 0x8b, 0x55, 0xf0, 0x00, 0x01, 0x0d, 0x20, 0x88, 0x01, 0xf1, 0x00, 0x01, 0x0d, 0x20,
0xf0, 0x06, 0x00, 0x0d, 0x11, 0x88, 0x01, 0xf0, 0x02, 0x03, 0x05, 0x0e, 0xd8, 0x0c, 0x0d, 0x90,
0x01, 0x89, 0x45, 0x88, 0x01, 0xf0, 0x06, 0x00, 0x0d, 0x0e, 0xd8, 0x0c, 0x0d, 0xd8, 0x0c, 0x0d,
0xf0, 0x05, 0x02, 0x0c, 0x0f, 0xf0, 0x00, 0x02, 0x05, 0x0f, 0xf9, 0xf2, 0x11, 0x01, 0x0d, 0x20,
0xf8, 0xf4, 0x0c, 0x00, 0x0c, 0x1d, 0xf2, 0x00, 0x01, 0x05, 0x0e, 0xd8, 0x0c, 0x0d, 0x8a, 0x01,
0xf0, 0x03, 0x01, 0x05, 0x0e, 0xfa };
static const int lt312_f_lines[] = { 2, 3, 4, 3, 3, 3, 5, 5, 5, 5, 5, 7, 7, 7, 7, 7, 7, 7, 7, 7,
7, 6, 6, 6, 6, 6, 6, 6, 7, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 9, 9, 10, 11, 11, 11, 11, 11, 14, 15, 16,
14, 14, -1, -1, 6, 6, 6, -1, 12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 12, -1, -1, -1 };
/* 3.12: lt_far (first line 318) */
static const uint8_t lt312_far_tab[] = { 0x80, 0x00, 0xd8, 0x08, 0x09, 0x88, 0x41, 0x89, 0x05,
0x80, 0x41, 0xf0, 0x54, 0x5c, 0x02, 0x00, 0x0c, 0x0d, 0x88, 0x71, 0x89, 0x35, 0x80, 0x4c };
static const int lt312_far_lines[] = { 318, 319, 319, 319, 319, 319, 5321, 5321, 5321, 5321, 5321
};
/* 3.13: lt_module (first line 1) */
static const uint8_t lt313_module_tab[] = { 0xf0, 0x03, 0x01, 0x01, 0x01, 0xf2, 0x04, 0x0e, 0x01,
0x0f, 0xf3, 0x78, 0x09, 0x4b, 0x4e, 0x01, 0x01, 0x11 };
static const int lt313_module_lines[] = { 0, 2, 2, 2, 318, 318, 318, 318 };
/* 3.13: lt_f (first line 2) */
static const uint8_t lt313_f_tab[] = { 0x80, 0x00, 0xd8, 0x09, 0x0a, 0xd8, 0x09, 0x0a, 0xf1, 0x03,
0x01, 0x0a, 0x0b, 0x80, 0x41, 0xe0, 0x07, 0x08, 0x88, 0x31, 0x83, 0x75, 0xe4, 0x16, 0x1b, 0x98,
0x41, 0x94, 0x68, 0xf3, 0x03, 0x01, 0x0d, 0x20, 0xd9, 0x16, 0x1e, 0x90, 0x11, 0xf0, 0x03, 0x00,
0x0e, 0x0f, 0x90, 0x11, 0x8c, 0x55, 0xd9, 0x16, 0x1e, 0xf0, 0x03, 0x00, 0x09, 0x0a, 0xf0, 0x00,
0x01, 0x0d, 0x20, 0x88, 0x01, 0xf0, 0x06, 0x00, 0x0d, 0x11, 0x88, 0x01, 0xf0, 0x02, 0x03, 0x05,
0x0e, 0xd8, 0x0c, 0x0d, 0x90, 0x01, 0x89, 0x45, 0x88, 0x01, 0xf0, 0x06, 0x00, 0x0d, 0x0e, 0xd8,
0x0c, 0x0d, 0xd8, 0x0c, 0x0d, 0xf0, 0x05, 0x02, 0x0c, 0x0f, 0xf0, 0x00, 0x02, 0x05, 0x0f, 0xf9,
0xf2, 0x11, 0x01, 0x0d, 0x20, 0xf8, 0xf4, 0x0c, 0x00, 0x0c, 0x1d, 0xf3, 0x00, 0x01, 0x05, 0x0e,
0xd8, 0x0c, 0x0d, 0x8a, 0x01, 0xf0, 0x03, 0x01, 0x05, 0x0e, 0xfa };
static const int lt313_f_lines[] = { 2, 3, 4, 3, 3, 3, 5, 5, 5, 5, 5, 5, 7, 7, 7, 7, 7, 7, 7, 7,
7, 7, 7, 6, 6, 6, 6, 7, 7, 7, 6, 6, 6, 6, 6, 6, 6, 7, 7, 6, 6, 6, 9, 9, 10, 11, 11, 11, 11, 11,
14, 15, 16, 14, 14, -1, -1, 6, 6, 6, -1, 12, 12, 12, 12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 12,
-1, -1, -1 };
/* 3.13: lt_far (first line 318) */
static const uint8_t lt313_far_tab[] = { 0x80, 0x00, 0xd8, 0x08, 0x09, 0x88, 0x41, 0x89, 0x05,
0x80, 0x41, 0xf0, 0x54, 0x5c, 0x02, 0x00, 0x0c, 0x0d, 0x88, 0x71, 0x89, 0x35, 0x80, 0x4c };
static const int lt313_far_lines[] = { 318, 319, 319, 319, 319, 319, 5321, 5321, 5321, 5321, 5321
};

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void check_table(const uint8_t *tab, size_t len, int first, const int *lines, int n)
{
	for (int i = 0; i < n; i++) {
		int got = py_linetable_line(tab, len, first, i);

		if (got != lines[i]) {
			char m[128];

			snprintf(m, sizeof(m), "code unit %d: line %d, CPython says %d", i, got,
				 lines[i]);
			unit_fail(__FILE__, __LINE__, m);
			return;
		}
	}
	/* past the end: not a line */
	CHECK_EQ_INT(py_linetable_line(tab, len, first, n), -ENOENT);
}

TEST(py_linetable_cpython311)
{
	check_table(lt_module_tab, sizeof(lt_module_tab), 1, lt_module_lines, N(lt_module_lines));
	check_table(lt_f_tab, sizeof(lt_f_tab), 2, lt_f_lines, N(lt_f_lines));
	check_table(lt_listcomp_tab, sizeof(lt_listcomp_tab), 6, lt_listcomp_lines,
		    N(lt_listcomp_lines));
	check_table(lt_far_tab, sizeof(lt_far_tab), 318, lt_far_lines, N(lt_far_lines));
}

TEST(py_linetable_cpython312_313)
{
	check_table(lt312_module_tab, sizeof(lt312_module_tab), 1, lt312_module_lines,
		    N(lt312_module_lines));
	check_table(lt312_f_tab, sizeof(lt312_f_tab), 2, lt312_f_lines, N(lt312_f_lines));
	check_table(lt312_far_tab, sizeof(lt312_far_tab), 318, lt312_far_lines,
		    N(lt312_far_lines));
	check_table(lt313_module_tab, sizeof(lt313_module_tab), 1, lt313_module_lines,
		    N(lt313_module_lines));
	check_table(lt313_f_tab, sizeof(lt313_f_tab), 2, lt313_f_lines, N(lt313_f_lines));
	check_table(lt313_far_tab, sizeof(lt313_far_tab), 318, lt313_far_lines,
		    N(lt313_far_lines));
}

TEST(py_linetable_edges)
{
	/* before the first instruction (prev_instr one before it): the first line */
	CHECK_EQ_INT(py_linetable_line(lt_f_tab, sizeof(lt_f_tab), 2, -1), 2);
	/* an empty table has no line for anything */
	CHECK_EQ_INT(py_linetable_line(NULL, 0, 7, 0), -ENOENT);
	/* a table that does not start at an entry, a varint cut short: malformed, not a line */
	{
		static const uint8_t mid[] = { 0x01, 0x02 };
		static const uint8_t cut[] = { 0xe8, 0x41 };	/* no columns, varint goes on */

		CHECK_EQ_INT(py_linetable_line(mid, sizeof(mid), 1, 0), -EINVAL);
		CHECK_EQ_INT(py_linetable_line(cut, sizeof(cut), 1, 0), -EINVAL);
	}
	/* hand-made: one-line forms (+0, +1, +2), no columns with a negative delta, no line */
	{
		static const uint8_t t[] = {
			0xd0, 0x00, 0x01,	/* code 10 (+0), 1 unit: line 10 */
			0xd9, 0x00, 0x01,	/* code 11 (+1), 2 units: 11 */
			0xe0, 0x00, 0x01,	/* code 12 (+2), 1 unit: 13 */
			0xe8, 0x05,		/* code 13, svarint 5 = -2, 1 unit: 11 */
			0xf8,			/* code 15, 1 unit: no line */
			0x80, 0x00,		/* code 0 (short form), 1 unit: still 11 */
		};
		static const int want[] = { 10, 11, 11, 13, 11, -1, 11 };

		check_table(t, sizeof(t), 10, want, N(want));
	}
}

/* ---- code objects read back from a process: here, fakes in our own memory (3.11 layout) -- */

struct fake_str {
	unsigned char obj[48 + 32];	/* PyASCIIObject, then the text */
};

static void fake_str(struct fake_str *s, const char *text)
{
	uint64_t len = strlen(text);
	uint32_t state = 1u << 2 | 1u << 5 | 1u << 6;	/* kind 1, compact, ascii */

	memset(s, 0, sizeof(*s));
	memcpy(s->obj + 16, &len, sizeof(len));
	memcpy(s->obj + 32, &state, sizeof(state));
	memcpy(s->obj + 48, text, len);
}

struct fake_code {
	unsigned char obj[200];
};

static const char code_name[] = "code";
static struct { unsigned char obj[32]; } code_type;
static struct fake_str fname, qname;

/* A code object "f.py" "fn" at first line 10 whose line table is the bytes object @lt */
static void fake_code(struct fake_code *c, const void *lt)
{
	uint64_t type = (uintptr_t)&code_type, q = (uintptr_t)&qname, f = (uintptr_t)&fname;
	uint64_t tab = (uintptr_t)lt, name = (uintptr_t)code_name;
	int32_t first = 10;

	memcpy(code_type.obj + 24, &name, sizeof(name));
	fake_str(&fname, "f.py");
	fake_str(&qname, "fn");
	memset(c, 0, sizeof(*c));
	memcpy(c->obj + 8, &type, sizeof(type));
	memcpy(c->obj + 72, &first, sizeof(first));
	memcpy(c->obj + 112, &f, sizeof(f));
	memcpy(c->obj + 128, &q, sizeof(q));
	memcpy(c->obj + 136, &tab, sizeof(tab));
}

/* A bytes object of @len bytes: one entry for code unit 0, then bytes the decoder skips */
static unsigned char *fake_table(size_t len)
{
	unsigned char *b = calloc(1, 32 + len);
	uint64_t n = len;

	if (b) {
		memcpy(b + 16, &n, sizeof(n));
		b[32] = 0x80;
	}
	return b;
}

/*
 * Can this process read its own memory by address, as the tracer reads a traced process's
 * (process_vm_readv)? Not under qemu-user (the cross-built tests of `make cross-test`): the
 * guest's addresses are not the host's. The tests of fake code objects in this process's
 * memory say so and skip there.
 */
static bool self_readable(void)
{
	static const uint64_t probe = 0x5079737461636b21ull;
	uint64_t got = 0;

	if (!pyrt_read(getpid(), (uintptr_t)&probe, &got, sizeof(got)) && got == probe)
		return true;
	printf("     (skipped: this process cannot read its own memory by address, qemu-user)\n");
	return false;
}

static struct pystack *self_stack(void)
{
	struct py_proc pp = { .pid = getpid(), .major = 3, .minor = 11,
			      .off = py_offsets_for(3, 11) };
	struct pystack *ps = pystack_new();

	if (ps)
		pystack_add_proc(ps, &pp);
	return ps;
}

static uint64_t frame_word(const void *code, unsigned int idx)
{
	return (uintptr_t)code | (uint64_t)(idx + 1) << SPYRE_PY_IDX_SHIFT;
}

/* A 1 MiB line table is not read: its frames are named, with no line, and counted (issue 43) */
TEST(pystack_long_line_table_not_read)
{
	if (!self_readable())
		return;

	struct pystack *ps = self_stack();
	unsigned char *lt = fake_table(1 << 20);
	static struct fake_code c;
	struct pystack_stats st;
	char buf[256];

	CHECK(ps && lt);
	if (!ps || !lt)
		goto out;
	fake_code(&c, lt);
	for (int i = 0; i < 1000; i++)
		CHECK(pystack_frame(ps, getpid(), frame_word(&c, 100 + i), buf, sizeof(buf)));
	CHECK_STR(buf, "f.py:? fn");
	pystack_counts(ps, &st);
	CHECK_EQ_INT(st.codes, 1);
	CHECK_EQ_INT(st.lt_long, 1);
out:
	free(lt);
	pystack_free(ps);
}

/*
 * New code objects on every call, each pointing at one 255 KiB line table: the cache is emptied
 * at its bound (32 MiB), the code objects forgotten counted, and still named right after
 */
TEST(pystack_code_cache_bounded)
{
	if (!self_readable())
		return;

	enum { N = 400 };
	struct pystack *ps = self_stack();
	unsigned char *lt = fake_table(255 << 10);
	struct fake_code *c = calloc(N, sizeof(*c));
	struct pystack_stats st;
	char buf[256];

	CHECK(ps && lt && c);
	if (!ps || !lt || !c)
		goto out;
	for (int i = 0; i < N; i++) {
		fake_code(&c[i], lt);
		CHECK(pystack_frame(ps, getpid(), frame_word(&c[i], 0), buf, sizeof(buf)));
	}
	CHECK_STR(buf, "f.py:10 fn");
	pystack_counts(ps, &st);
	CHECK_EQ_INT(st.codes, N);
	/* 255 KiB each: at most 127 held at once */
	CHECK(st.evicted >= N - PY_CACHE_BYTES / (255 << 10));
	CHECK(pystack_frame(ps, getpid(), frame_word(&c[0], 0), buf, sizeof(buf)));
	CHECK_STR(buf, "f.py:10 fn");
	pystack_counts(ps, &st);
	CHECK_EQ_INT(st.codes, N + 1);	/* forgotten, read again */
out:
	free(c);
	free(lt);
	pystack_free(ps);
}

/* The lines of a code object's indexes, cached per slot: the same as the table says */
TEST(pystack_line_cache_agrees_with_the_table)
{
	if (!self_readable())
		return;

	struct pystack *ps = self_stack();
	unsigned char *lt = calloc(1, 32 + sizeof(lt_f_tab));
	static struct fake_code c;
	uint64_t n = sizeof(lt_f_tab);
	char buf[64], want[64];

	CHECK(ps && lt);
	if (!ps || !lt)
		goto out;
	memcpy(lt + 16, &n, sizeof(n));
	memcpy(lt + 32, lt_f_tab, sizeof(lt_f_tab));
	fake_code(&c, lt);
	/* every index, three rounds, and indexes 8 apart (one slot) in turn */
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N(lt_f_lines); i++) {
			int k = round == 2 ? (i % 2 ? i : (i + 8) % N(lt_f_lines)) : i;
			int line = py_linetable_line(lt_f_tab, sizeof(lt_f_tab), 10, k);

			CHECK(pystack_frame(ps, getpid(), frame_word(&c, (unsigned int)k), buf,
					    sizeof(buf)));
			if (line < 0)
				snprintf(want, sizeof(want), "f.py:? fn");
			else
				snprintf(want, sizeof(want), "f.py:%d fn", line);
			CHECK_STR(buf, want);
		}
	}
out:
	free(lt);
	pystack_free(ps);
}
