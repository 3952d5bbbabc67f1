// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/pystack.h"
#include "stream/spyre_event_user.h"
#include "common/array.h"

/* Strings longer than this are cut: a frame's name stays one line of the trace. */
#define PY_STR_MAX	200
/* The lines of a code object's last instruction indexes, direct-mapped by index */
#define PY_LINE_SLOTS		8

struct code_info {
	uint64_t key;		/* address; 0 = empty slot */
	uint32_t pid;
	bool bad;		/* not a code object when read */
	int firstlineno;
	char *qualname, *filename;
	uint8_t *linetable;
	size_t ltlen;
	bool lt_long;		/* its line table was longer than PY_LINETABLE_MAX: not read */
	uint32_t line_idx[PY_LINE_SLOTS];	/* index + 1 (0: empty slot) */
	int line[PY_LINE_SLOTS];
};

struct pystack {
	struct py_proc *procs;
	int nprocs;
	size_t capprocs;
	struct code_info *codes;	/* open addressing on (pid, address) */
	size_t cap, cnt;
	size_t bytes;		/* what the cache holds (PY_CACHE_BYTES) */
	struct pystack_stats st;
};

struct pystack *pystack_new(void)
{
	return calloc(1, sizeof(struct pystack));
}

static void code_free(struct code_info *ci)
{
	free(ci->qualname);
	free(ci->filename);
	free(ci->linetable);
}

/* Every code object forgotten (the cache at its bound, or freed) */
static void codes_clear(struct pystack *ps)
{
	for (size_t i = 0; i < ps->cap; i++)
		if (ps->codes[i].key)
			code_free(&ps->codes[i]);
	if (ps->cap)
		memset(ps->codes, 0, ps->cap * sizeof(*ps->codes));
	ps->cnt = 0;
	ps->bytes = 0;
}

void pystack_free(struct pystack *ps)
{
	if (!ps)
		return;
	codes_clear(ps);
	free(ps->codes);
	free(ps->procs);
	free(ps);
}

int pystack_add_proc(struct pystack *ps, const struct py_proc *pp)
{
	for (int i = 0; i < ps->nprocs; i++) {
		if (ps->procs[i].pid == pp->pid) {
			ps->procs[i] = *pp;
			return 0;
		}
	}
	if (array_reserve(&ps->procs, &ps->capprocs, (size_t)ps->nprocs + 1, sizeof(*pp), 4))
		return -ENOMEM;
	ps->procs[ps->nprocs++] = *pp;
	return 0;
}

static const struct py_proc *proc_of(const struct pystack *ps, uint32_t pid)
{
	for (int i = 0; i < ps->nprocs; i++)
		if ((uint32_t)ps->procs[i].pid == pid && ps->procs[i].off)
			return &ps->procs[i];
	return NULL;
}

void pystack_counts(const struct pystack *ps, struct pystack_stats *st)
{
	*st = ps->st;
}

/* (an unsigned varint: 6 bits a byte, low first, 0x40 says more follow) */
static int scan_varint(const uint8_t *t, size_t len, size_t *i, unsigned int *out)
{
	unsigned int v = 0, shift = 0;
	uint8_t b;

	do {
		if (*i >= len || shift > 24)
			return -EINVAL;
		b = t[(*i)++];
		v |= (unsigned int)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	*out = v;
	return 0;
}

/*
 * As CPython 3.11's codeobject.c reads it (advance, get_line_delta): each entry starts with a
 * byte with bit 7 set, bits 3-6 its code, bits 0-2 the code units it covers less one. Code 15:
 * no line; 14 (long form) and 13 (no columns): a signed varint line delta follows; 10-12: the
 * line moves by code - 10; 0-9: the same line. Column bytes and the long form's other varints
 * are skipped by looking for the next entry's start.
 */
int py_linetable_line(const uint8_t *t, size_t len, int firstlineno, int idx)
{
	int line = firstlineno, addr = 0;
	size_t i = 0;

	if (idx < 0)
		return firstlineno;	/* as PyCode_Addr2Line for a negative offset */
	while (i < len) {
		uint8_t b = t[i];
		int code = (b >> 3) & 15, n = (b & 7) + 1, delta = 0;
		unsigned int u;

		if (!(b & 0x80))
			return -EINVAL;
		i++;
		if (code == 13 || code == 14) {
			size_t j = i;

			if (scan_varint(t, len, &j, &u))
				return -EINVAL;
			delta = u & 1 ? -(int)(u >> 1) : (int)(u >> 1);
		} else if (code >= 10 && code <= 12) {
			delta = code - 10;
		}
		line += delta;
		if (idx < addr + n)
			return code == 15 ? -1 : line;
		addr += n;
		while (i < len && !(t[i] & 0x80))
			i++;
	}
	return -ENOENT;
}

/* A str object's text, UTF-8, malloc'd; NULL if @addr is not one we can read. */
static char *read_unicode(const struct py_proc *pp, uint64_t addr)
{
	const struct py_offsets *o = pp->off;
	uint8_t hdr[128];
	uint32_t state, kind;
	uint64_t n;
	size_t unit, data;
	uint8_t *raw;
	char *out, *w;

	if (!addr || o->uni_compact_data > sizeof(hdr) ||
	    pyrt_read(pp->pid, addr, hdr, o->uni_compact_data))
		return NULL;
	memcpy(&n, hdr + o->uni_length, sizeof(n));
	memcpy(&state, hdr + o->uni_state, sizeof(state));
	/* 3.11 state bits: interned 0-1, kind 2-4, compact 5, ascii 6, ready 7 */
	kind = (state >> 2) & 7;
	if (!(state & (1u << 5)) || (kind != 1 && kind != 2 && kind != 4))
		return NULL;	/* not compact (legacy strings hold a pointer): not ours */
	unit = kind;
	data = state & (1u << 6) ? o->uni_ascii_data : o->uni_compact_data;
	if (n > PY_STR_MAX)
		n = PY_STR_MAX;
	raw = malloc(n * unit + 1);
	out = malloc(n * 4 + 1);
	if (!raw || !out || pyrt_read(pp->pid, addr + data, raw, n * unit)) {
		free(raw);
		free(out);
		return NULL;
	}
	w = out;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t c = unit == 1 ? raw[i] : unit == 2 ? ((uint16_t *)raw)[i] :
			     ((uint32_t *)raw)[i];

		if (c < 0x20 || (c >= 0xd800 && c < 0xe000) || c > 0x10ffff)
			c = '?';
		if (c < 0x80) {
			*w++ = c;
		} else if (c < 0x800) {
			*w++ = 0xc0 | c >> 6;
			*w++ = 0x80 | (c & 63);
		} else if (c < 0x10000) {
			*w++ = 0xe0 | c >> 12;
			*w++ = 0x80 | ((c >> 6) & 63);
			*w++ = 0x80 | (c & 63);
		} else {
			*w++ = 0xf0 | c >> 18;
			*w++ = 0x80 | ((c >> 12) & 63);
			*w++ = 0x80 | ((c >> 6) & 63);
			*w++ = 0x80 | (c & 63);
		}
	}
	*w = 0;
	free(raw);
	return out;
}

/*
 * Code object @addr of @pp read into @ci: its type must be the interpreter's code type (its
 * tp_name "code"), else it is marked bad (a frame torn down while the BPF read it).
 */
static void read_code(const struct py_proc *pp, uint64_t addr, struct code_info *ci)
{
	const struct py_offsets *o = pp->off;
	uint64_t type = 0, tname = 0, lt = 0, ltlen = 0, q = 0, f = 0;
	int32_t first = 0;
	char name[8] = "";

	ci->bad = true;
	if (pyrt_read(pp->pid, addr + o->ob_type, &type, sizeof(type)) || !type ||
	    pyrt_read(pp->pid, type + o->tp_name, &tname, sizeof(tname)) || !tname ||
	    pyrt_read(pp->pid, tname, name, 5) || memcmp(name, "code", 5))
		return;
	if (pyrt_read(pp->pid, addr + o->co_firstlineno, &first, sizeof(first)) ||
	    pyrt_read(pp->pid, addr + o->co_qualname, &q, sizeof(q)) ||
	    pyrt_read(pp->pid, addr + o->co_filename, &f, sizeof(f)) ||
	    pyrt_read(pp->pid, addr + o->co_linetable, &lt, sizeof(lt)))
		return;
	ci->firstlineno = first;
	ci->qualname = read_unicode(pp, q);
	ci->filename = read_unicode(pp, f);
	if (!ci->qualname || !ci->filename)
		return;
	/* the line table is a bytes object: its size, then its bytes */
	if (lt && !pyrt_read(pp->pid, lt + o->bytes_size, &ltlen, sizeof(ltlen)) &&
	    ltlen > PY_LINETABLE_MAX)
		ci->lt_long = true;
	else if (lt && ltlen <= PY_LINETABLE_MAX) {
		ci->linetable = malloc(ltlen ? ltlen : 1);
		if (ci->linetable && !pyrt_read(pp->pid, lt + o->bytes_data, ci->linetable, ltlen))
			ci->ltlen = ltlen;
	}
	ci->bad = false;
}

static uint64_t slot_hash(uint32_t pid, uint64_t addr)
{
	uint64_t h = (addr ^ ((uint64_t)pid << 48)) * 0x9e3779b97f4a7c15ull;

	return h ^ (h >> 29);
}

static int grow(struct pystack *ps)
{
	size_t cap = ps->cap ? ps->cap * 2 : 256;
	struct code_info *n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < ps->cap; i++) {
		struct code_info *c = &ps->codes[i];
		size_t j;

		if (!c->key)
			continue;
		for (j = slot_hash(c->pid, c->key) & (cap - 1); n[j].key; j = (j + 1) & (cap - 1))
			;
		n[j] = *c;
	}
	free(ps->codes);
	ps->codes = n;
	ps->cap = cap;
	return 0;
}

/* The code object @addr of @pp, read on first use; NULL when memory ran out. */
static struct code_info *code_of(struct pystack *ps, const struct py_proc *pp, uint64_t addr)
{
	struct code_info *c;
	size_t j;

	if ((ps->cnt + 1) * 2 > ps->cap && ps->cnt < PY_CACHE_CODES && grow(ps))
		return NULL;
	for (j = slot_hash(pp->pid, addr) & (ps->cap - 1); ps->codes[j].key;
	     j = (j + 1) & (ps->cap - 1)) {
		c = &ps->codes[j];
		if (c->key == addr && c->pid == (uint32_t)pp->pid)
			return c;
	}
	if (ps->cnt >= PY_CACHE_CODES || ps->bytes > PY_CACHE_BYTES - PY_LINETABLE_MAX -
	    2 * (PY_STR_MAX * 4 + 1)) {
		/* at a bound: emptied whole, the slot found again in the empty table */
		ps->st.evicted += ps->cnt;
		codes_clear(ps);
		j = slot_hash(pp->pid, addr) & (ps->cap - 1);
	}
	c = &ps->codes[j];
	memset(c, 0, sizeof(*c));
	c->key = addr;
	c->pid = pp->pid;
	read_code(pp, addr, c);
	if (c->bad)
		ps->st.bad++;
	if (c->lt_long)
		ps->st.lt_long++;
	ps->bytes += sizeof(*c) + c->ltlen + (c->qualname ? strlen(c->qualname) + 1 : 0) +
		     (c->filename ? strlen(c->filename) + 1 : 0);
	ps->st.codes++;
	ps->cnt++;
	return c;
}

/* The line of code unit @idx + 1 (the frame word's index) of @c, each index decoded once */
static int code_line(struct code_info *c, unsigned int idx)
{
	unsigned int k = idx % PY_LINE_SLOTS;

	if (c->line_idx[k] == idx + 1)
		return c->line[k];
	c->line[k] = py_linetable_line(c->linetable, c->ltlen, c->firstlineno, (int)idx - 1);
	c->line_idx[k] = idx + 1;
	return c->line[k];
}

bool pystack_frame(struct pystack *ps, uint32_t pid, uint64_t word, char *buf, size_t len)
{
	const struct py_proc *pp = proc_of(ps, pid);
	uint64_t addr = word & SPYRE_PY_ADDR_MASK;
	unsigned int idx = word >> SPYRE_PY_IDX_SHIFT;
	struct code_info *c;
	int line;

	if (!pp || !addr || !(c = code_of(ps, pp, addr)) || c->bad)
		return false;
	/* the word holds the index + 1; an index too large to hold has no line we know */
	line = idx == SPYRE_PY_IDX_UNKNOWN ? -1 : code_line(c, idx);
	/* no line rather than a wrong one: "?" */
	if (line < 0)
		snprintf(buf, len, "%s:? %s", c->filename, c->qualname);
	else
		snprintf(buf, len, "%s:%d %s", c->filename, line, c->qualname);
	return true;
}
