// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resolve/elfsym.h"
#include "resolve/demangle.h"
#include "unit.h"

#define MAX_FUNCS 256

struct fn {
	char name[256];
	char qualname[256];
	unsigned long vaddr, size, file_off, local_entry;
	bool endbr;
	bool clone;
};

struct fns {
	struct fn f[MAX_FUNCS];
	int n;
	int stop_after;
};

static int collect_cb(const struct elf_func *f, void *ctx)
{
	struct fns *c = ctx;
	struct fn *d;

	if (c->n >= MAX_FUNCS)
		return -E2BIG;
	d = &c->f[c->n++];
	snprintf(d->name, sizeof(d->name), "%s", f->name);
	snprintf(d->qualname, sizeof(d->qualname), "%s", f->qualname);
	d->vaddr = f->vaddr;
	d->size = f->size;
	d->file_off = f->file_off;
	d->local_entry = f->local_entry;
	d->endbr = f->endbr;
	d->clone = f->clone;
	if (c->stop_after && c->n == c->stop_after)
		return 9;
	return 0;
}

static void fixture_path(char *buf, size_t sz, const char *name)
{
	snprintf(buf, sz, "%s/%s", unit_fixture_dir(), name);
}

static int count_qual(const struct fns *c, const char *q)
{
	int n = 0;

	for (int i = 0; i < c->n; i++)
		n += !strcmp(c->f[i].qualname, q);
	return n;
}

static const struct fn *find_qual(const struct fns *c, const char *q)
{
	for (int i = 0; i < c->n; i++)
		if (!strcmp(c->f[i].qualname, q))
			return &c->f[i];
	return NULL;
}

static const struct fn *find_name(const struct fns *c, const char *n)
{
	for (int i = 0; i < c->n; i++)
		if (!strcmp(c->f[i].name, n))
			return &c->f[i];
	return NULL;
}

static char *slurp(const char *path, size_t *len)
{
	struct stat st;
	char *buf = NULL;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	if (!fstat(fd, &st) && st.st_size > 0) {
		buf = malloc((size_t)st.st_size);
		if (buf && read(fd, buf, (size_t)st.st_size) != st.st_size) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)st.st_size;
	}
	close(fd);
	return buf;
}

/* Independent of libelf: vaddr -> file offset straight from the raw program headers. */
static bool raw_vaddr_to_off(const char *img, size_t len, unsigned long vaddr, unsigned long *off)
{
	const Elf64_Ehdr *eh = (const void *)img;
	const Elf64_Phdr *ph;

	if (len < sizeof(*eh) || eh->e_phoff + eh->e_phnum * sizeof(*ph) > len)
		return false;
	ph = (const void *)(img + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && vaddr >= ph[i].p_vaddr &&
		    vaddr < ph[i].p_vaddr + ph[i].p_filesz) {
			*off = vaddr - ph[i].p_vaddr + ph[i].p_offset;
			return true;
		}
	}
	return false;
}

static const char *const fixture_quals[] = {
	"fixture::Widget::Widget",
	"fixture::Widget::id",
	"fixture::Widget::scale",
	"fixture::Widget::operator()",
	"fixture::Widget::operator<",
	"fixture::Widget::operator>>",
	"fixture::Widget::name",
	"fixture::twice<int>",
	"fixture_c_entry",
	"fixture_use_all",
	"fixture_local_helper",
};

TEST(elfsym_fixture)
{
	static struct fns c;
	static const unsigned char endbr[4] = { 0xf3, 0x0f, 0x1e, 0xfa };
	char path[PATH_MAX];
	unsigned long off = 0;
	size_t len = 0;
	char *img;
	const struct fn *f, *s1, *s2;

	fixture_path(path, sizeof(path), "libfixture.so");
	img = slurp(path, &len);
	CHECK(img != NULL);
	if (!img)
		return;
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(elfsym_foreach(path, collect_cb, &c), 0);

	for (size_t i = 0; i < sizeof(fixture_quals) / sizeof(fixture_quals[0]); i++) {
		f = find_qual(&c, fixture_quals[i]);
		if (!f) {
			unit_fail(__FILE__, __LINE__, fixture_quals[i]);
			continue;
		}
		CHECK_EQ_INT(f->endbr, FIXTURE_ENDBR);
		CHECK(f->size > 0);
		/* The uprobe offset really points at endbr64 in the file... */
		CHECK(f->file_off + 4 <= len &&
		      (memcmp(img + f->file_off, endbr, 4) == 0) == FIXTURE_ENDBR);
		/* ...and follows the PT_LOAD rule. */
		CHECK(raw_vaddr_to_off(img, len, f->vaddr, &off));
		CHECK_EQ_INT(f->file_off, off);
#if defined(__powerpc64__)
		/* the local entry, if any, is past the global entry's TOC setup: addis r2,r12,... */
		CHECK(f->local_entry == 0 || (f->local_entry == 8 && off + 4 <= len &&
					      img[off + 3] == 0x3c && img[off + 2] == 0x4c));
#else
		CHECK_EQ_INT(f->local_entry, 0);
#endif
	}

	/* Overloads are two functions with one qualname. */
	CHECK_EQ_INT(count_qual(&c, "fixture::Widget::scale"), 2);
	s1 = find_name(&c, "_ZN7fixture6Widget5scaleEi");
	s2 = find_name(&c, "_ZN7fixture6Widget5scaleEd");
	CHECK(s1 && s2 && s1->vaddr != s2->vaddr);

	f = find_name(&c, "_ZN7fixture5twiceIiEET_S1_");
	CHECK(f != NULL);
	if (f)
		CHECK_STR(f->qualname, "fixture::twice<int>");
	f = find_name(&c, "fixture_c_entry");
	CHECK(f != NULL);
	if (f)
		CHECK_STR(f->qualname, "fixture_c_entry");

	for (int i = 0; i < c.n; i++)
		CHECK(!c.f[i].clone || strchr(c.f[i].name, '.'));
	f = find_qual(&c, "fixture_use_all");
	CHECK(f && !f->clone);
	/* GCC splits the exception path of fixture_use_all() off into a ".cold" part. */
	f = find_name(&c, "fixture_use_all.cold");
	if (f)
		CHECK(f->clone);

	/* In both .dynsym and .symtab, reported once. */
	CHECK_EQ_INT(count_qual(&c, "fixture_c_entry"), 1);
	CHECK_EQ_INT(count_qual(&c, "fixture::twice<int>"), 1);
	for (int i = 0; i < c.n; i++) {
		for (int j = i + 1; j < c.n; j++)
			CHECK(c.f[i].vaddr != c.f[j].vaddr || strcmp(c.f[i].name, c.f[j].name));
		CHECK(c.f[i].vaddr != 0);
	}
	free(img);
}

/* vaddr as the dynamic loader sees it: symbol address minus load base. */
TEST(elfsym_vaddr_matches_dlsym)
{
	static struct fns c;
	char path[PATH_MAX];
	const struct fn *f;
	void *h, *sym;
	Dl_info di;

	fixture_path(path, sizeof(path), "libfixture.so");
	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(elfsym_foreach(path, collect_cb, &c), 0);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	CHECK(h != NULL);
	if (!h)
		return;
	sym = dlsym(h, "_ZNK7fixture6Widget2idEv");
	f = find_name(&c, "_ZNK7fixture6Widget2idEv");
	CHECK(sym && f && dladdr(sym, &di));
	if (sym && f)
		CHECK_EQ_INT((unsigned long)sym - (unsigned long)di.dli_fbase, f->vaddr);
	dlclose(h);
}

/* the build id mk/progs.mk gives libfixture.so (FIXTURE_BUILD_ID); strip keeps the note */
TEST(elfsym_build_id)
{
	static const unsigned char want[20] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
						16, 17, 18, 19, 20 };
	unsigned char id[32];
	char path[PATH_MAX];

	fixture_path(path, sizeof(path), "libfixture.so");
	CHECK_EQ_INT(elfsym_build_id(path, id, sizeof(id)), 20);
	CHECK(!memcmp(id, want, sizeof(want)));
	fixture_path(path, sizeof(path), "libfixture-stripped.so");
	memset(id, 0, sizeof(id));
	CHECK_EQ_INT(elfsym_build_id(path, id, sizeof(id)), 20);
	CHECK(!memcmp(id, want, sizeof(want)));
	/* no room for it: none given, never a part */
	CHECK_EQ_INT(elfsym_build_id(path, id, 16), -ENOENT);
	CHECK_EQ_INT(elfsym_build_id("/nonexistent/lib.so", id, sizeof(id)), -ENOENT);
	CHECK_EQ_INT(elfsym_build_id("/proc/self/status", id, sizeof(id)), -ENOEXEC);
}

TEST(elfsym_stripped)
{
	static struct fns full, str;
	char path[PATH_MAX];
	const struct fn *a, *b;

	fixture_path(path, sizeof(path), "libfixture.so");
	memset(&full, 0, sizeof(full));
	CHECK_EQ_INT(elfsym_foreach(path, collect_cb, &full), 0);
	fixture_path(path, sizeof(path), "libfixture-stripped.so");
	memset(&str, 0, sizeof(str));
	CHECK_EQ_INT(elfsym_foreach(path, collect_cb, &str), 0);

	CHECK(find_qual(&full, "fixture_local_helper") != NULL);
	CHECK(find_qual(&str, "fixture_local_helper") == NULL);
	CHECK(str.n < full.n);
	/* Exported ones survive strip with identical addresses and offsets. */
	for (int i = 0; i < 3; i++) {
		const char *q = i == 0 ? "fixture_c_entry" :
				i == 1 ? "fixture::twice<int>" : "fixture::Widget::id";

		a = find_qual(&full, q);
		b = find_qual(&str, q);
		CHECK(a && b);
		if (a && b) {
			CHECK_EQ_INT(a->vaddr, b->vaddr);
			CHECK_EQ_INT(a->file_off, b->file_off);
			CHECK_EQ_INT(b->endbr, FIXTURE_ENDBR);
		}
	}
	CHECK_EQ_INT(count_qual(&str, "fixture::Widget::scale"), 2);
}

TEST(elfsym_mem_matches_file)
{
	static struct fns a, b;
	char path[PATH_MAX];
	size_t len;
	void *map;
	int fd;

	fixture_path(path, sizeof(path), "libfixture.so");
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	len = (size_t)lseek(fd, 0, SEEK_END);
	/* Read-only mapping: libelf must not write into the caller's image. */
	map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	CHECK(map != MAP_FAILED);
	if (map == MAP_FAILED)
		return;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	CHECK_EQ_INT(elfsym_foreach(path, collect_cb, &a), 0);
	CHECK_EQ_INT(elfsym_foreach_mem(map, len, collect_cb, &b), 0);
	CHECK_EQ_INT(a.n, b.n);
	CHECK(a.n > 10);
	CHECK(!memcmp(&a, &b, sizeof(a)));

	/* The callback's stop value comes back unchanged. */
	memset(&b, 0, sizeof(b));
	b.stop_after = 2;
	CHECK_EQ_INT(elfsym_foreach_mem(map, len, collect_cb, &b), 9);
	CHECK_EQ_INT(b.n, 2);
	munmap(map, len);
}

/*
 * BFD ld puts .text at vaddr == file offset, which would hide a resolver that skips the PT_LOAD
 * translation. Move the executable segment (and the symbols in it) up by 64 KiB in memory.
 */
static bool shift_exec_segment(char *img, size_t len, unsigned long delta, unsigned long *lo,
			       unsigned long *hi)
{
	Elf64_Ehdr *eh = (void *)img;
	Elf64_Phdr *ph = (void *)(img + eh->e_phoff);
	Elf64_Shdr *sh = (void *)(img + eh->e_shoff);
	bool found = false;

	if (eh->e_shoff + eh->e_shnum * sizeof(*sh) > len)
		return false;
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X))
			continue;
		*lo = ph[i].p_vaddr;
		*hi = ph[i].p_vaddr + ph[i].p_filesz;
		ph[i].p_vaddr += delta;
		ph[i].p_paddr += delta;
		found = true;
	}
	for (int i = 0; found && i < eh->e_shnum; i++) {
		Elf64_Sym *sym = (void *)(img + sh[i].sh_offset);

		if (sh[i].sh_type != SHT_SYMTAB && sh[i].sh_type != SHT_DYNSYM)
			continue;
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*sym); k++)
			if (sym[k].st_value >= *lo && sym[k].st_value < *hi)
				sym[k].st_value += delta;
	}
	return found;
}

TEST(elfsym_vaddr_differs_from_offset)
{
	static struct fns a, b;
	const unsigned long delta = 0x10000;
	char path[PATH_MAX];
	unsigned long lo = 0, hi = 0;
	const struct fn *x, *y;
	size_t len = 0;
	char *img;

	fixture_path(path, sizeof(path), "libfixture.so");
	img = slurp(path, &len);
	CHECK(img != NULL);
	if (!img)
		return;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	CHECK_EQ_INT(elfsym_foreach_mem(img, len, collect_cb, &a), 0);
	CHECK(shift_exec_segment(img, len, delta, &lo, &hi));
	CHECK_EQ_INT(elfsym_foreach_mem(img, len, collect_cb, &b), 0);
	CHECK_EQ_INT(a.n, b.n);
	for (size_t i = 0; i < sizeof(fixture_quals) / sizeof(fixture_quals[0]); i++) {
		x = find_qual(&a, fixture_quals[i]);
		y = find_qual(&b, fixture_quals[i]);
		CHECK(x && y);
		if (!x || !y)
			continue;
		CHECK(x->vaddr >= lo && x->vaddr < hi);
		CHECK_EQ_INT(y->vaddr, x->vaddr + delta);
		CHECK_EQ_INT(y->file_off, x->file_off);
		CHECK_EQ_INT(y->endbr, FIXTURE_ENDBR);
	}
	free(img);
}

static int write_tmp(char *tmpl, const void *buf, size_t len)
{
	int fd = mkstemp(tmpl);

	if (fd < 0)
		return -1;
	if (write(fd, buf, len) != (ssize_t)len) {
		close(fd);
		unlink(tmpl);
		return -1;
	}
	close(fd);
	return 0;
}

TEST(elfsym_errors)
{
	static struct fns c;
	char path[PATH_MAX], tmp[] = "/tmp/elfsym-test-XXXXXX";
	const char text[] = "this is not an ELF file, just text that is long enough\n";
	size_t len = 0;
	char *img;

	memset(&c, 0, sizeof(c));
	CHECK_EQ_INT(elfsym_foreach("/nonexistent/libnothing.so", collect_cb, &c), -ENOENT);
	CHECK_EQ_INT(elfsym_foreach("/proc/self", collect_cb, &c), -ENOEXEC);

	CHECK_EQ_INT(write_tmp(tmp, text, sizeof(text) - 1), 0);
	CHECK_EQ_INT(elfsym_foreach(tmp, collect_cb, &c), -ENOEXEC);
	unlink(tmp);
	CHECK_EQ_INT(elfsym_foreach_mem(text, sizeof(text) - 1, collect_cb, &c), -ENOEXEC);
	CHECK_EQ_INT(c.n, 0);

	fixture_path(path, sizeof(path), "libfixture.so");
	img = slurp(path, &len);
	CHECK(img && len > 1000);
	if (!img)
		return;
	strcpy(tmp, "/tmp/elfsym-test-XXXXXX");
	CHECK_EQ_INT(write_tmp(tmp, img, 1000), 0);
	CHECK(elfsym_foreach(tmp, collect_cb, &c) < 0);
	unlink(tmp);
	CHECK(elfsym_foreach_mem(img, 1000, collect_cb, &c) < 0);
	CHECK_EQ_INT(c.n, 0);
	free(img);
}

/* DT_SONAME: the name a library glob also matches (libstdc++.so.6 for libstdc++.so.6.0.30) */
TEST(elfsym_soname_read)
{
	char path[PATH_MAX], name[64];
	const char text[] = "not an ELF file\n";
	size_t len = 0;
	char *img;

	fixture_path(path, sizeof(path), "libfixture.so");
	CHECK_EQ_INT(elfsym_soname(path, name, sizeof(name)), 0);
	CHECK_STR(name, "libfixture.so.1");
	/* the stripped copy keeps .dynamic */
	fixture_path(path, sizeof(path), "libfixture-stripped.so");
	CHECK_EQ_INT(elfsym_soname(path, name, sizeof(name)), 0);
	CHECK_STR(name, "libfixture.so.1");
	img = slurp(path, &len);
	CHECK(img);
	if (img) {
		CHECK_EQ_INT(elfsym_soname_mem(img, len, name, sizeof(name)), 0);
		CHECK_STR(name, "libfixture.so.1");
		/* a name that does not fit is refused, not cut */
		CHECK_EQ_INT(elfsym_soname_mem(img, len, name, 8), -ENAMETOOLONG);
		CHECK_STR(name, "");
		/* cut short: the dynamic section is past the end */
		CHECK(elfsym_soname_mem(img, 1000, name, sizeof(name)) <= 0);
		CHECK_STR(name, "");
		free(img);
	}
	/* no DT_SONAME (an executable): "" */
	CHECK_EQ_INT(elfsym_soname("/proc/self/exe", name, sizeof(name)), 0);
	CHECK_STR(name, "");
	CHECK_EQ_INT(elfsym_soname("/nonexistent/libx.so", name, sizeof(name)), -ENOENT);
	CHECK_EQ_INT(elfsym_soname_mem(text, sizeof(text) - 1, name, sizeof(name)), -ENOEXEC);
	CHECK_STR(name, "");
}

static int count_cb(const struct elf_func *f, void *ctx)
{
	/* Touch the strings so that ASan sees any dangling pointer. */
	*(size_t *)ctx += strlen(f->name) + strlen(f->qualname) > 0;
	return 0;
}

/* Truncations at every length and deterministic byte corruption: errors, never crashes. */
TEST(elfsym_corrupt_images)
{
	char path[PATH_MAX];
	size_t len = 0, n, off;
	unsigned int seed = 12345;
	char *img, *mut;
	int err;

	fixture_path(path, sizeof(path), "libfixture.so");
	img = slurp(path, &len);
	CHECK(img != NULL);
	if (!img)
		return;
	for (size_t l = 0; l < len; l += 97) {
		n = 0;
		err = elfsym_foreach_mem(img, l, count_cb, &n);
		CHECK(err <= 0);
	}
	mut = malloc(len);
	CHECK(mut != NULL);
	for (int it = 0; mut && it < 600; it++) {
		memcpy(mut, img, len);
		for (int k = 0; k < 8; k++) {
			seed = seed * 1103515245u + 12345u;
			/* Mostly the headers, where the offsets and counts live. */
			off = (k & 1) ? (seed >> 8) % len : (seed >> 8) % 128;
			if (k == 2)
				off = len - 1 - (seed >> 8) % 2048; /* section headers at the end */
			mut[off] = (char)(seed >> 3);
		}
		n = 0;
		err = elfsym_foreach_mem(mut, len, count_cb, &n);
		CHECK(err <= 0);
	}
	free(mut);
	free(img);
}

TEST(demangle_qualname_cases)
{
	static const char *const cases[][2] = {
		{ "_ZN4flex13RuntimeStream18launchOperationH2DEPvPKvm",
		  "flex::RuntimeStream::launchOperationH2D" },
		{ "_ZNK4flex13RuntimeStream2idEv", "flex::RuntimeStream::id" },
		{ "_ZN2ns1fIiEEiT_", "ns::f<int>" },
		{ "_ZNK7fixture6WidgetclEi", "fixture::Widget::operator()" },
		{ "_ZNK7fixture6WidgetltERKS0_", "fixture::Widget::operator<" },
		{ "_ZN7fixture6WidgetrsEi", "fixture::Widget::operator>>" },
		{ "_ZN2ns3FooptEv", "ns::Foo::operator->" },
		{ "_ZN2nsltIiEEbRKT_S3_", "ns::operator< <int>" },
		{ "_ZN2ns3FoocviEv", "ns::Foo::operator int" },
		{ "_ZN2ns3FoodaEPv", "ns::Foo::operator delete[]" },
		{ "_ZNK7fixture6Widget4nameB5cxx11Ev", "fixture::Widget::name" },
		{ "_ZN12_GLOBAL__N_13fooEi", "(anonymous namespace)::foo" },
		{ "_ZZ3fooiENKUliE_clEi", "foo(int)::{lambda(int)#1}::operator()" },
		{ "_ZNSt6vectorIiSaIiEE9push_backERKi",
		  "std::vector<int, std::allocator<int> >::push_back" },
		{ "_ZNKSt8functionIFviEEclEi", "std::function<void (int)>::operator()" },
		{ "_ZN2ns1gIiEEPFviEv", "ns::g<int>" },
		{ "_ZNO2ns3Foo3refEv", "ns::Foo::ref" },
		{ "_ZN2ns3FooD1Ev", "ns::Foo::~Foo" },
		{ "_ZThn8_N2ns3Foo3barEv", "non-virtual thunk to ns::Foo::bar" },
		{ "_Z3fooi.cold", "foo [clone .cold]" },
		{ "_ZL20fixture_local_helperi", "fixture_local_helper" },
		{ "_ZZ3foovE1x", "foo()::x" },
	};
	char *q;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		q = demangle_qualname(cases[i][0]);
		CHECK_STR(q, cases[i][1]);
		free(q);
	}
	CHECK(demangle_qualname("main") == NULL);
	CHECK(demangle_qualname("_Zxyz") == NULL);
	CHECK(demangle_qualname("_Z") == NULL);
	/* found by fuzz_elfsym: demangles to brackets that reduce to an empty name */
	CHECK(demangle_qualname("_ZN7f>\xdc" "1}[eIEES_S_") == NULL);
	CHECK(demangle_qualname("") == NULL);
	CHECK(demangle_qualname(NULL) == NULL);
}

struct imports {
	bool memcpy_seen, entry_seen;
	unsigned long entry_slot;
	int n;
};

static int import_cb(unsigned long slot, const char *name, void *ctx)
{
	struct imports *im = ctx;

	im->n++;
	im->memcpy_seen |= !strcmp(name, "memcpy");
	if (!strcmp(name, "fixture_c_entry")) {
		im->entry_seen = true;
		im->entry_slot = slot;
	}
	return 0;
}

TEST(elfsym_imports_and_exports)
{
	struct imports im = {};
	struct fns ex = {};
	char path[PATH_MAX];
	bool plt_read;
	const struct fn *f;

	fixture_path(path, sizeof(path), "libfixture.so");
	/* the GOT slots, where retsite_plt_slot reads PLT stubs: x86-64 and s390x */
#if defined(__x86_64__) || defined(__s390x__)
	plt_read = true;
#else
	plt_read = false;
#endif
	CHECK_EQ_INT(elfsym_imports(path, import_cb, &im), 0);
	CHECK(plt_read ? im.memcpy_seen && im.entry_seen && im.entry_slot : !im.n);
	/* a callback's non-zero stops the walk and is returned */
	ex.stop_after = 1;
	CHECK_EQ_INT(elfsym_exports(path, collect_cb, &ex), 9);
	CHECK_EQ_INT(ex.n, 1);
	ex = (struct fns){};
	CHECK_EQ_INT(elfsym_exports(path, collect_cb, &ex), 0);
	f = find_name(&ex, "fixture_c_entry");
	CHECK(f && f->file_off && f->vaddr);
	/* static: not in the dynamic symbol table */
	CHECK(!find_name(&ex, "_ZL20fixture_local_helperi"));
	CHECK_EQ_INT(elfsym_imports("/nonexistent/lib.so", import_cb, &im), -ENOENT);
	CHECK_EQ_INT(elfsym_exports("/dev/null", collect_cb, &ex), -ENOEXEC);
}

/* ---- hostile files (issue 43): claims checked before libelf allocates or reads them ------- */

/* The peak RSS of this process in kB: a claim must not have made it grow */
static long maxrss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* The crafted files are written in this machine's byte order (s390x: big-endian) */
#define HOST_ELFDATA	(__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? ELFDATA2MSB : ELFDATA2LSB)


/*
 * A sparse x86-64 ET_DYN file at @tmpl (mkstemp'd) of @size bytes: its section headers @sh
 * (@nsh of them) at 4096, @e_shnum in its header, @note (@nlen bytes) at 8192. 0 or -1.
 */
static int write_sparse(char *tmpl, const Elf64_Shdr *sh, int nsh, unsigned int e_shnum,
			const void *note, size_t nlen, off_t size)
{
	Elf64_Ehdr eh = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, HOST_ELFDATA,
			     EV_CURRENT },
		.e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
		.e_shoff = 4096, .e_ehsize = sizeof(Elf64_Ehdr), .e_phentsize = sizeof(Elf64_Phdr),
		.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = (Elf64_Half)e_shnum,
	};
	int fd = mkstemp(tmpl), ok;

	if (fd < 0)
		return -1;
	ok = pwrite(fd, &eh, sizeof(eh), 0) == sizeof(eh) &&
	     pwrite(fd, sh, nsh * sizeof(*sh), 4096) == (ssize_t)(nsh * sizeof(*sh)) &&
	     (!nlen || pwrite(fd, note, nlen, 8192) == (ssize_t)nlen) && !ftruncate(fd, size);
	close(fd);
	return ok ? 0 : -1;
}

/*
 * 2,000,000 section headers by extended numbering, in a 128 MB sparse file (8 KB on disk): libelf
 * allocated a descriptor for each when it opened the file, 527 MB for its DT_SONAME. Refused.
 */
TEST(elfsym_hostile_section_count)
{
	char tmp[] = "/tmp/elfsym-test-XXXXXX", name[64];
	Elf64_Shdr sh0 = { .sh_size = 2000000 };
	unsigned char id[20];
	static struct fns c;
	long before = maxrss_kb();
	int fd;

	CHECK_EQ_INT(write_sparse(tmp, &sh0, 1, 0, NULL, 0, 4096 + 2000000ll * 64), 0);
	CHECK_EQ_INT(elfsym_soname(tmp, name, sizeof(name)), -ENOEXEC);
	CHECK_EQ_INT(elfsym_build_id(tmp, id, sizeof(id)), -ENOEXEC);
	CHECK_EQ_INT(elfsym_foreach(tmp, collect_cb, &c), -ENOEXEC);
	fd = open(tmp, O_RDONLY);
	CHECK_EQ_INT(elfsym_check_fd(fd), -ENOEXEC);
	close(fd);
	CHECK(maxrss_kb() - before < 32 * 1024);
	unlink(tmp);
	/* a count past the file: refused too, also from memory */
	{
		Elf64_Ehdr eh = {
			.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, HOST_ELFDATA,
				     EV_CURRENT },
			.e_type = ET_DYN, .e_machine = EM_X86_64, .e_shoff = 64,
			.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 1000,
		};
		unsigned char img[4096] = { 0 };

		memcpy(img, &eh, sizeof(eh));
		CHECK_EQ_INT(elfsym_soname_mem(img, sizeof(img), name, sizeof(name)), -ENOEXEC);
		CHECK_EQ_INT(elfsym_foreach_mem(img, sizeof(img), collect_cb, &c), -ENOEXEC);
	}
	CHECK_EQ_INT(c.n, 0);
}

/*
 * A note section claiming 400 MB (sparse): libelf read it whole for the build id (413 MB, 2.6 s).
 * Read by bounded preads: a build id at its start still found, none in zeros, RSS flat.
 */
TEST(elfsym_hostile_note_size)
{
	char tmp[] = "/tmp/elfsym-test-XXXXXX";
	Elf64_Shdr sh[2] = { { 0 }, { .sh_type = SHT_NOTE, .sh_flags = SHF_ALLOC,
				      .sh_offset = 8192, .sh_size = 400u << 20, .sh_addralign = 4 } };
	struct {
		Elf64_Nhdr h;
		char name[4];
		unsigned char desc[20];
	} note = { { 4, 20, NT_GNU_BUILD_ID }, "GNU", { 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4,
							     5, 6, 7, 8, 9, 10 } };
	unsigned char id[20];
	long before = maxrss_kb();

	CHECK_EQ_INT(write_sparse(tmp, sh, 2, 2, &note, sizeof(note), 8192 + (400ll << 20)), 0);
	CHECK_EQ_INT(elfsym_build_id(tmp, id, sizeof(id)), 20);
	CHECK(!memcmp(id, note.desc, sizeof(id)));
	unlink(tmp);
	strcpy(tmp, "/tmp/elfsym-test-XXXXXX");
	CHECK_EQ_INT(write_sparse(tmp, sh, 2, 2, NULL, 0, 8192 + (400ll << 20)), 0);
	CHECK_EQ_INT(elfsym_build_id(tmp, id, sizeof(id)), -ENOENT);
	unlink(tmp);
	CHECK(maxrss_kb() - before < 32 * 1024);
}
