// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * elfsym_foreach_mem(), elfsym_soname_mem() and demangle_qualname() on hostile bytes: the
 * libraries come from the traced process. An input starting with "_Z" is a symbol name for the
 * demangler, anything else an ELF image (ELF symbol names reach the demangler too, through
 * elfsym).
 */
#include <errno.h>

#include "fuzz.h"
#include "resolve/elfsym.h"
#include "resolve/demangle.h"

/*
 * Same bound as elfsym's DEMANGLE_MAX_LEN: longer names never reach the demangler. Crafted names
 * can make __cxa_demangle exponential; if slow units show up (-timeout), lower this to keep
 * smoke runs about parser bugs, and report the input against elfsym.
 */
#define FUZZ_DEMANGLE_MAX 4096

struct walk {
	const uint8_t *img;
	size_t size;
	unsigned long calls;
	unsigned long stop_at;	/* 1-based call that returns non-zero, 0 = never */
};

static int on_func(const struct elf_func *f, void *ctx)
{
	struct walk *w = ctx;

	FUZZ_CHECK(f->name && f->name[0]);
	/* An empty qualname would match no probe and print as "" in the trace. */
	FUZZ_CHECK(f->qualname && f->qualname[0]);
	/* strlen reads every byte: ASan checks that the strings end in bounds. */
	FUZZ_CHECK(strlen(f->name) < w->size && strlen(f->qualname) > 0);
	FUZZ_CHECK(f->vaddr != 0);
	/* The uprobe offset must be inside the file, and endbr must really be there. */
	FUZZ_CHECK(f->file_off < w->size);
	if (f->endbr) {
		FUZZ_CHECK(w->size - f->file_off >= 4);
		FUZZ_CHECK(!memcmp(w->img + f->file_off, "\xf3\x0f\x1e\xfa", 4));
	}
	w->calls++;
	return w->calls == w->stop_at ? 42 : 0;
}

static void fuzz_elf(const uint8_t *data, size_t size)
{
	struct walk w = { .img = data, .size = size };
	char soname[256];
	int err;

	/* the SONAME is read from the same hostile image: a name that ends inside the buffer */
	err = elfsym_soname_mem(data, size, soname, sizeof(soname));
	FUZZ_CHECK(err == 0 || err == -ENOEXEC || err == -ENAMETOOLONG || err == -EINVAL);
	FUZZ_CHECK(strlen(soname) < sizeof(soname));
	err = elfsym_foreach_mem(data, size, on_func, &w);
	FUZZ_CHECK(err == 0 || err == -ENOEXEC || err == -ENOMEM);
	if (err || !w.calls)
		return;
	/* A non-zero callback value stops the walk at once and is returned unchanged. */
	w = (struct walk){ .img = data, .size = size, .stop_at = 1 };
	err = elfsym_foreach_mem(data, size, on_func, &w);
	FUZZ_CHECK(err == 42 && w.calls == 1);
}

static void fuzz_demangle(const uint8_t *data, size_t size)
{
	char *name, *q;

	if (size > FUZZ_DEMANGLE_MAX)
		size = FUZZ_DEMANGLE_MAX;
	name = fuzz_strdup(data, size);
	q = demangle_qualname(name);
	if (q) {
		FUZZ_CHECK(strlen(q) > 0);
		free(q);
	}
	free(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size >= 2 && data[0] == '_' && data[1] == 'Z')
		fuzz_demangle(data, size);
	else
		fuzz_elf(data, size);
	return 0;
}
