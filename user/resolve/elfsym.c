// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ELF function symbols via libelf (their C++ qualified names: demangle.c).
 *
 * The ELF comes from the traced process. It is opened with ELF_C_READ, not mmap, so that a file
 * truncated under us gives read errors instead of SIGBUS; libelf bounds-checks section data
 * against the file size, and everything else (symbol -> PT_LOAD -> file offset, the 4 bytes at
 * that offset) is checked here.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resolve/demangle.h"
#include "resolve/elfsym.h"


static const unsigned char endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };

/* Where the raw file bytes come from: a descriptor (pread) or the caller's buffer. */
struct elf_src {
	int fd;
	const unsigned char *mem;
	size_t size;
};

struct cand {
	const char *name;
	unsigned long vaddr;
	unsigned long size;
	unsigned long file_off;
	unsigned char other;	/* st_other */
};

/*
 * ppc64le (ELFv2): a function has a global entry, which sets up r2 (the TOC pointer) from
 * r12, and a local entry that calls within the module branch to directly; st_other's top
 * three bits give the distance. Calls from other modules come through the global entry and
 * fall through to the local one: a probe there sees both. 0 elsewhere.
 */
static unsigned long local_entry_off(const GElf_Ehdr *eh, unsigned char other)
{
	if (eh->e_machine != EM_PPC64 || (eh->e_flags & EF_PPC64_ABI) != 2)
		return 0;
	return PPC64_LOCAL_ENTRY_OFFSET(other);
}

static bool src_read(const struct elf_src *src, unsigned long off, void *out, size_t n)
{
	if (off > src->size || src->size - off < n)
		return false;
	if (src->mem) {
		memcpy(out, src->mem + off, n);
		return true;
	}
	return pread(src->fd, out, n, (off_t)off) == (ssize_t)n;
}

/* One page of the file, for many reads of a few bytes in file order. */
struct src_page {
	unsigned long off;	/* of buf[0] */
	size_t len;		/* 0: empty */
	unsigned char buf[4096];
};

/*
 * src_read through @pg: the first bytes of every function, in address order, a page read at a
 * time. Why: a pread of 4 bytes each made 4,915 system calls for libstdc++ alone, 15-25 ms of
 * start-up on this project's VM (2026-12-07); a page each, ~300.
 */
static bool src_read_paged(const struct elf_src *src, struct src_page *pg, unsigned long off,
			   void *out, size_t n)
{
	unsigned long start = off & ~(unsigned long)(sizeof(pg->buf) - 1);
	size_t len = sizeof(pg->buf);

	if (src->mem || off > src->size || src->size - off < n)
		return src_read(src, off, out, n);
	if (!pg->len || start != pg->off) {
		if (src->size - start < len)
			len = src->size - start;
		pg->len = 0;
		if (pread(src->fd, pg->buf, len, (off_t)start) != (ssize_t)len)
			return false;
		pg->off = start;
		pg->len = len;
	}
	if (off - start > pg->len || pg->len - (off - start) < n)	/* across the page's end */
		return src_read(src, off, out, n);
	memcpy(out, pg->buf + (off - start), n);
	return true;
}

/*
 * Bounds on what a traced process's file may make us allocate or read. libelf allocates every
 * section header's descriptor (~266 bytes each) when it opens a file, before we look at
 * anything: an 8 KB sparse file claiming 2,000,000 sections (extended numbering) cost 527 MB,
 * read only for its DT_SONAME. The linked files of Debian bookworm's /usr/lib and /usr/bin
 * (2,251 of them) have at most 64 sections (libc.so.6) and 14 program headers; relocatable
 * objects have more (28,362) but are not mapped to run. Notes and the dynamic section are read
 * with bounded preads, never whole: a sparse 400 MB note section cost 413 MB and 2.6 s.
 */
#define ELF_MAX_SECTIONS	4096
#define ELF_MAX_PHDRS		4096
#define NOTE_READ_MAX		(64u << 10)	/* of one note section or segment */
#define NOTES_READ_MAX		(256u << 10)	/* of all the notes of one file */
#define DYN_READ_MAX		(64u << 10)	/* of the dynamic section (4,096 entries) */

static uint64_t get_u(const unsigned char *p, size_t n, bool msb)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[msb ? n - 1 - i : i] << (8 * i);
	return v;
}

/*
 * The ELF header of @src checked before libelf sees the file: its section and program header
 * tables inside the file, of the size their class gives, and at most ELF_MAX_SECTIONS and
 * ELF_MAX_PHDRS of them (extended numbering included). 0, or -ENOEXEC.
 */
static int check_headers(const struct elf_src *src)
{
	unsigned char eh[64], sh0[64];
	bool is64, msb;
	uint64_t shoff, phoff, shnum, phnum, shent, phent, want_sh, want_ph;

	if (!src_read(src, 0, eh, 16) || memcmp(eh, ELFMAG, SELFMAG))
		return -ENOEXEC;
	is64 = eh[EI_CLASS] == ELFCLASS64;
	msb = eh[EI_DATA] == ELFDATA2MSB;
	if ((!is64 && eh[EI_CLASS] != ELFCLASS32) ||
	    !src_read(src, 0, eh, is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr)))
		return -ENOEXEC;
	if (is64) {
		phoff = get_u(eh + offsetof(Elf64_Ehdr, e_phoff), 8, msb);
		shoff = get_u(eh + offsetof(Elf64_Ehdr, e_shoff), 8, msb);
		phent = get_u(eh + offsetof(Elf64_Ehdr, e_phentsize), 2, msb);
		phnum = get_u(eh + offsetof(Elf64_Ehdr, e_phnum), 2, msb);
		shent = get_u(eh + offsetof(Elf64_Ehdr, e_shentsize), 2, msb);
		shnum = get_u(eh + offsetof(Elf64_Ehdr, e_shnum), 2, msb);
		want_sh = sizeof(Elf64_Shdr);
		want_ph = sizeof(Elf64_Phdr);
	} else {
		phoff = get_u(eh + offsetof(Elf32_Ehdr, e_phoff), 4, msb);
		shoff = get_u(eh + offsetof(Elf32_Ehdr, e_shoff), 4, msb);
		phent = get_u(eh + offsetof(Elf32_Ehdr, e_phentsize), 2, msb);
		phnum = get_u(eh + offsetof(Elf32_Ehdr, e_phnum), 2, msb);
		shent = get_u(eh + offsetof(Elf32_Ehdr, e_shentsize), 2, msb);
		shnum = get_u(eh + offsetof(Elf32_Ehdr, e_shnum), 2, msb);
		want_sh = sizeof(Elf32_Shdr);
		want_ph = sizeof(Elf32_Phdr);
	}
	if (shoff) {
		if (shent != want_sh || !src_read(src, shoff, sh0, want_sh))
			return -ENOEXEC;
		/* extended numbering: the counts in section 0 (sh_size, sh_info) */
		if (!shnum)
			shnum = is64 ? get_u(sh0 + offsetof(Elf64_Shdr, sh_size), 8, msb) :
				       get_u(sh0 + offsetof(Elf32_Shdr, sh_size), 4, msb);
		if (phnum == PN_XNUM)
			phnum = is64 ? get_u(sh0 + offsetof(Elf64_Shdr, sh_info), 4, msb) :
				       get_u(sh0 + offsetof(Elf32_Shdr, sh_info), 4, msb);
		if (shnum > ELF_MAX_SECTIONS || shoff > src->size ||
		    shnum * want_sh > src->size - shoff)
			return -ENOEXEC;
	}
	if (phnum && (phent != want_ph || phnum > ELF_MAX_PHDRS || phoff > src->size ||
		      phnum * want_ph > src->size - phoff))
		return -ENOEXEC;
	return 0;
}

int elfsym_check_fd(int fd)
{
	struct stat st;
	struct elf_src src = { .fd = fd };

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return -ENOEXEC;
	src.size = (size_t)st.st_size;
	return check_headers(&src);
}

/*
 * At most @max bytes of the @size at file offset @off of @src (what the file holds of them),
 * malloc'd into *@out: their count, 0 when none could be read (*@out NULL).
 */
static size_t read_bounded(const struct elf_src *src, uint64_t off, uint64_t size, size_t max,
			   unsigned char **out)
{
	size_t n;

	*out = NULL;
	if (off >= src->size)
		return 0;
	n = size < max ? (size_t)size : max;
	if (n > src->size - off)
		n = src->size - off;
	if (!n || !(*out = malloc(n)))
		return 0;
	if (!src_read(src, off, *out, n)) {
		free(*out);
		*out = NULL;
		return 0;
	}
	return n;
}

/* File offset of @vaddr through the PT_LOAD whose file-backed part contains it. */
static bool vaddr_to_off(const GElf_Phdr *ph, size_t phnum, size_t fsize, unsigned long vaddr,
			 unsigned long *off)
{
	size_t i;

	for (i = 0; i < phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (vaddr < ph[i].p_vaddr || vaddr - ph[i].p_vaddr >= ph[i].p_filesz)
			continue;
		if (ph[i].p_offset > fsize || vaddr - ph[i].p_vaddr >= fsize - ph[i].p_offset)
			continue;
		*off = vaddr - ph[i].p_vaddr + ph[i].p_offset;
		return true;
	}
	return false;
}

/* GCC's suffixes for split-off parts and specialised copies of a function. */
static bool is_clone_name(const char *name)
{
	static const char *const sfx[] = { ".cold", ".part.", ".constprop.", ".isra.",
					   ".lto_priv.", ".localalias", ".clone." };
	const char *dot = strchr(name, '.');
	size_t k;

	for (; dot; dot = strchr(dot + 1, '.'))
		for (k = 0; k < sizeof(sfx) / sizeof(sfx[0]); k++)
			if (!strncmp(dot, sfx[k], strlen(sfx[k])))
				return true;
	return false;
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	return strcmp(x->name, y->name);
}

static bool sym_is_func(const GElf_Sym *s)
{
	int type = GELF_ST_TYPE(s->st_info);

	return (type == STT_FUNC || type == STT_GNU_IFUNC) && s->st_value &&
	       s->st_shndx != SHN_UNDEF && s->st_name;
}

/*
 * Walk the symbol tables; with @out NULL only count candidates, else fill @out (at most @max).
 * Returns the number of candidates or -ENOEXEC.
 */
static long collect(Elf *elf, const GElf_Phdr *ph, size_t phnum, size_t fsize, struct cand *out,
		    size_t max)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Sym sym;
	Elf_Data *data;
	size_t i, nsyms, entsz, n = 0, tables = 0;
	unsigned long off;
	const char *name;

	entsz = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!entsz)
		return -ENOEXEC;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			return -ENOEXEC;
		if (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			return -ENOEXEC;
		tables++;
		nsyms = data->d_size / entsz;
		if (nsyms > INT_MAX)
			return -ENOEXEC;
		for (i = 0; i < nsyms; i++) {
			if (!gelf_getsym(data, (int)i, &sym) || !sym_is_func(&sym))
				continue;
			if (!vaddr_to_off(ph, phnum, fsize, sym.st_value, &off))
				continue;
			/* elf_strptr checks the index and the terminating NUL. */
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			if (out) {
				if (n >= max)
					return -ENOEXEC;
				out[n].name = name;
				out[n].vaddr = sym.st_value;
				out[n].size = sym.st_size;
				out[n].file_off = off;
				out[n].other = sym.st_other;
			}
			n++;
		}
	}
	/* A "library" without any symbol table cannot be resolved (e.g. a truncated copy). */
	if (!tables)
		return -ENOEXEC;
	return (long)n;
}

static int foreach_elf(Elf *elf, const struct elf_src *src, elfsym_cb cb, void *ctx,
		       bool demangle)
{
	GElf_Phdr *ph = NULL;
	struct cand *c = NULL;
	struct elf_func f;
	GElf_Ehdr eh;
	size_t phnum, shstrndx, i;
	struct src_page *page = NULL;
	unsigned char insn[4];
	bool x86;
	long n, n2;
	char *dm;
	int err = 0;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return -ENOEXEC;
	/* Fails when the section header table lies outside the file. */
	if (elf_getphdrnum(elf, &phnum) || elf_getshdrstrndx(elf, &shstrndx))
		return -ENOEXEC;
	x86 = eh.e_machine == EM_X86_64;

	/* libelf has validated that the program headers fit in the file: phnum is bounded. */
	ph = calloc(phnum ? phnum : 1, sizeof(*ph));
	if (!ph || (x86 && !(page = calloc(1, sizeof(*page))))) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph[i])) {
			err = -ENOEXEC;
			goto out;
		}
	}

	n = collect(elf, ph, phnum, src->size, NULL, 0);
	if (n <= 0) {
		err = (int)n;
		goto out;
	}
	c = calloc((size_t)n, sizeof(*c));
	if (!c) {
		err = -ENOMEM;
		goto out;
	}
	n2 = collect(elf, ph, phnum, src->size, c, (size_t)n);
	if (n2 < 0) {
		err = (int)n2;
		goto out;
	}

	/* Sorting by (vaddr, name) makes the .dynsym/.symtab duplicates adjacent. */
	qsort(c, (size_t)n2, sizeof(*c), cand_cmp);
	for (i = 0; i < (size_t)n2; i++) {
		if (i && c[i].vaddr == c[i - 1].vaddr && !strcmp(c[i].name, c[i - 1].name))
			continue;
		dm = demangle ? demangle_qualname(c[i].name) : NULL;
		f.name = c[i].name;
		f.qualname = dm ? dm : c[i].name;
		f.vaddr = c[i].vaddr;
		f.size = c[i].size;
		f.file_off = c[i].file_off;
		f.clone = is_clone_name(c[i].name);
		f.local_entry = local_entry_off(&eh, c[i].other);
		f.endbr = x86 && src_read_paged(src, page, c[i].file_off, insn, sizeof(insn)) &&
			  !memcmp(insn, endbr64, sizeof(insn));
		err = cb(&f, ctx);
		free(dm);
		if (err)
			goto out;
	}
out:
	free(page);
	free(c);
	free(ph);
	return err;
}

/*
 * Open the ELF file at @path for reading into @src and @elf; returns its descriptor (the caller
 * closes it after elf_end) or -errno.
 */
static int elf_open(const char *path, struct elf_src *src, Elf **elf)
{
	struct stat st;
	int fd, err;

	*elf = NULL;
	if (!path)
		return -EINVAL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	/* O_NONBLOCK: the path may have been swapped for a FIFO, which would block open(). */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -ENOEXEC;
		goto fail;
	}
	*src = (struct elf_src){ .fd = fd, .size = (size_t)st.st_size };
	err = check_headers(src);
	if (err)
		goto fail;
	*elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!*elf) {
		err = -ENOEXEC;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return err;
}

static int foreach_path(const char *path, elfsym_cb cb, void *ctx, bool demangle)
{
	struct elf_src src;
	Elf *elf;
	int fd, err;

	if (!cb)
		return -EINVAL;
	fd = elf_open(path, &src, &elf);
	if (fd < 0)
		return fd;
	err = foreach_elf(elf, &src, cb, ctx, demangle);
	elf_end(elf);
	close(fd);
	return err;
}

int elfsym_foreach(const char *path, elfsym_cb cb, void *ctx)
{
	return foreach_path(path, cb, ctx, true);
}

int elfsym_foreach_raw(const char *path, elfsym_cb cb, void *ctx)
{
	return foreach_path(path, cb, ctx, false);
}

int elfsym_foreach_mem(const void *buf, size_t len, elfsym_cb cb, void *ctx)
{
	struct elf_src src = { .fd = -1, .mem = buf, .size = len };
	Elf *elf;
	int err;

	if (!buf || !cb)
		return -EINVAL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;

	if (check_headers(&src))
		return -ENOEXEC;
	/* libelf only reads the image (it copies whatever it must convert). */
	elf = elf_memory((char *)buf, len);
	if (!elf)
		return -ENOEXEC;
	err = foreach_elf(elf, &src, cb, ctx, true);
	elf_end(elf);
	return err;
}

/*
 * DT_SONAME through the SHT_DYNAMIC section and the string table it links to (libelf checks
 * that the section lies in the file). The name alone is read from the table, checked to end
 * inside it and the file: loading the whole table (elf_strptr) took 60 ms for the 316 files a
 * PyTorch process maps, this 16-32 ms (each file is read once a run: resolve.c).
 */
static int soname_elf(Elf *elf, const struct elf_src *src, char *out, size_t len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh, str;
	const char *ident;
	bool is64, msb;

	if (!len)
		return -EINVAL;
	out[0] = 0;
	if (elf_kind(elf) != ELF_K_ELF || !(ident = elf_getident(elf, NULL)))
		return -ENOEXEC;
	is64 = ident[EI_CLASS] == ELFCLASS64;
	msb = ident[EI_DATA] == ELFDATA2MSB;
	while ((scn = elf_nextscn(elf, scn))) {
		size_t ent = is64 ? sizeof(Elf64_Dyn) : sizeof(Elf32_Dyn), w = ent / 2, n;
		unsigned char *d;
		uint64_t tag = DT_NULL, val = 0;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		/* its entries read by a bounded pread (the section may claim 400 MB) */
		n = read_bounded(src, sh.sh_offset, sh.sh_size, DYN_READ_MAX, &d) / ent;
		for (size_t i = 0; i < n; i++) {
			tag = get_u(d + i * ent, w, msb);
			val = get_u(d + i * ent + w, w, msb);
			if (tag == DT_NULL || tag == DT_SONAME)
				break;
		}
		free(d);
		if (tag != DT_SONAME)
			continue;
		if (!gelf_getshdr(elf_getscn(elf, sh.sh_link), &str) ||
		    str.sh_type != SHT_STRTAB || val >= str.sh_size)
			return -ENOEXEC;
		n = str.sh_size - val < len ? str.sh_size - val : len;
		/* a table cut by the end of the file: what is there */
		if (str.sh_offset > src->size || val > src->size - str.sh_offset)
			return -ENOEXEC;
		if (n > src->size - str.sh_offset - val)
			n = src->size - str.sh_offset - val;
		if (!n || !src_read(src, str.sh_offset + val, out, n)) {
			out[0] = 0;
			return -ENOEXEC;
		}
		if (!memchr(out, 0, n)) {
			out[0] = 0;
			return n == len ? -ENAMETOOLONG : -ENOEXEC;
		}
		return 0;
	}
	return 0;
}

int elfsym_soname(const char *path, char *out, size_t len)
{
	struct elf_src src;
	Elf *elf;
	int fd, err;

	if (len)
		out[0] = 0;
	fd = elf_open(path, &src, &elf);
	if (fd < 0)
		return fd;
	err = soname_elf(elf, &src, out, len);
	elf_end(elf);
	close(fd);
	return err;
}

int elfsym_soname_mem(const void *buf, size_t size, char *out, size_t len)
{
	struct elf_src src = { .fd = -1, .mem = buf, .size = size };
	Elf *elf;
	int err;

	if (len)
		out[0] = 0;
	if (!buf || elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	if (check_headers(&src))
		return -ENOEXEC;
	elf = elf_memory((char *)buf, size);
	if (!elf)
		return -ENOEXEC;
	err = soname_elf(elf, &src, out, len);
	elf_end(elf);
	return err;
}

/*
 * The GNU build id among the notes in @n bytes at @d (aligned to @align, 4 or 8, in the file's
 * byte order @msb) into @out: its length, or 0 when there is none.
 */
static int build_id_notes(const unsigned char *d, size_t n, size_t align, bool msb,
			  unsigned char *out, size_t cap)
{
	size_t off = 0;

	while (n - off >= 12) {
		uint64_t namesz = get_u(d + off, 4, msb), descsz = get_u(d + off + 4, 4, msb);
		uint64_t type = get_u(d + off + 8, 4, msb), name = off + 12, desc;

		if (namesz > n - name)
			break;
		desc = (name + namesz + align - 1) & ~(uint64_t)(align - 1);
		if (desc > n || descsz > n - desc)
			break;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(d + name, "GNU", 4) &&
		    descsz > 0 && descsz <= cap) {
			memcpy(out, d + desc, descsz);
			return (int)descsz;
		}
		off = (desc + descsz + align - 1) & ~(uint64_t)(align - 1);
		if (off >= n)
			break;
	}
	return 0;
}

/*
 * The GNU build id in the notes of @elf (sections, else program headers) into @out. Each note
 * section or segment is read by a bounded pread: its first NOTE_READ_MAX bytes, and at most
 * NOTES_READ_MAX bytes of notes in all (a build id comes first, in a section of 36 bytes).
 */
static int build_id_elf(Elf *elf, const struct elf_src *src, unsigned char *out, size_t cap)
{
	Elf_Scn *scn = NULL;
	size_t phnum, budget = NOTES_READ_MAX;
	const char *ident;
	bool msb;

	if (elf_kind(elf) != ELF_K_ELF || !(ident = elf_getident(elf, NULL)))
		return -ENOEXEC;
	msb = ident[EI_DATA] == ELFDATA2MSB;
	for (int pass = 0; pass < 2; pass++) {
		size_t i = 0;

		if (pass == 1 && elf_getphdrnum(elf, &phnum))
			break;
		while (budget) {
			uint64_t off, size, align;
			unsigned char *d;
			size_t n;
			int len;

			if (pass == 0) {
				GElf_Shdr sh;

				scn = elf_nextscn(elf, scn);
				if (!scn)
					break;
				if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
					continue;
				off = sh.sh_offset;
				size = sh.sh_size;
				align = sh.sh_addralign;
			} else {
				GElf_Phdr ph;

				if (i >= phnum)
					break;
				if (!gelf_getphdr(elf, (int)i++, &ph) || ph.p_type != PT_NOTE)
					continue;
				off = ph.p_offset;
				size = ph.p_filesz;
				align = ph.p_align;
			}
			n = read_bounded(src, off, size, budget < NOTE_READ_MAX ? budget :
					 NOTE_READ_MAX, &d);
			budget -= n;
			len = n ? build_id_notes(d, n, align == 8 ? 8 : 4, msb, out, cap) : 0;
			free(d);
			if (len)
				return len;
		}
	}
	return -ENOENT;
}

int elfsym_build_id(const char *path, unsigned char *out, size_t cap)
{
	struct elf_src src;
	Elf *elf;
	int fd, err;

	fd = elf_open(path, &src, &elf);
	if (fd < 0)
		return fd;
	err = build_id_elf(elf, &src, out, cap);
	elf_end(elf);
	close(fd);
	return err;
}

/* ---- dynamic linking: GOT slots, exports ------------------------------------------------- */

struct elf_file {
	int fd;
	Elf *elf;
	GElf_Ehdr eh;
	GElf_Phdr *ph;
	size_t phnum;
	size_t size;
};

static void elf_file_close(struct elf_file *f)
{
	free(f->ph);
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
}

static int elf_file_open(const char *path, struct elf_file *f)
{
	struct stat st;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (f->fd < 0)
		return -errno;
	if (fstat(f->fd, &st) || !S_ISREG(st.st_mode))
		goto bad;
	f->size = (size_t)st.st_size;
	if (check_headers(&(struct elf_src){ .fd = f->fd, .size = f->size }))
		goto bad;
	f->elf = elf_begin(f->fd, ELF_C_READ, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF || !gelf_getehdr(f->elf, &f->eh) ||
	    elf_getphdrnum(f->elf, &f->phnum))
		goto bad;
	f->ph = calloc(f->phnum ? f->phnum : 1, sizeof(*f->ph));
	if (!f->ph)
		goto bad;
	for (size_t i = 0; i < f->phnum; i++)
		if (!gelf_getphdr(f->elf, (int)i, &f->ph[i]))
			goto bad;
	return 0;
bad:
	elf_file_close(f);
	return -ENOEXEC;
}

/* The symbol table section @link of @f: @data and the string table's index. */
static Elf_Data *symtab_data(const struct elf_file *f, size_t link, size_t *strndx)
{
	Elf_Scn *scn = elf_getscn(f->elf, link);
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB))
		return NULL;
	*strndx = sh.sh_link;
	return elf_getdata(scn, NULL);
}

/* What a table walk hands each entry to: elfsym_imports' or elfsym_exports' caller. */
struct table_walk {
	elfsym_import_cb import_cb;
	elfsym_cb func_cb;
	void *ctx;
};

typedef int (*table_fn)(const struct elf_file *f, const GElf_Shdr *sh, Elf_Data *data,
			struct table_walk *w);

/*
 * @fn on each section of @type in the ELF file at @path that has entries, until it returns
 * non-zero. Returns that value, 0, or -errno when @path is not an ELF file we can read.
 */
static int each_table(const char *path, GElf_Word type, table_fn fn, struct table_walk *w)
{
	struct elf_file f;
	Elf_Scn *scn = NULL;
	int err = elf_file_open(path, &f);

	if (err)
		return err;
	while (!err && (scn = elf_nextscn(f.elf, scn))) {
		Elf_Data *data;
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == type && sh.sh_entsize &&
		    (data = elf_getdata(scn, NULL)))
			err = fn(&f, &sh, data, w);
	}
	elf_file_close(&f);
	return err;
}

/* A relocation table's GOT slots, by the symbol each is filled with */
static int import_table(const struct elf_file *f, const GElf_Shdr *sh, Elf_Data *data,
			struct table_walk *w)
{
	size_t n = data->d_size / sh->sh_entsize, strndx;
	Elf_Data *syms;
	int err = 0;

	/* the PLT's slots: the architectures whose PLT stubs retsite_plt_slot reads */
	if (f->eh.e_machine != EM_X86_64 && f->eh.e_machine != EM_S390)
		return 0;
	syms = symtab_data(f, sh->sh_link, &strndx);
	if (!syms)
		return 0;
	for (size_t i = 0; i < n && i < INT_MAX && !err; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		const char *name;
		unsigned long type;

		if (!gelf_getrela(data, (int)i, &r))
			continue;
		type = GELF_R_TYPE(r.r_info);
		if ((f->eh.e_machine == EM_X86_64 ? type != R_X86_64_JUMP_SLOT &&
		     type != R_X86_64_GLOB_DAT : type != R_390_JMP_SLOT &&
		     type != R_390_GLOB_DAT) ||
		    !gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym) ||
		    !(name = elf_strptr(f->elf, strndx, sym.st_name)) || !*name)
			continue;
		err = w->import_cb(r.r_offset, name, w->ctx);
	}
	return err;
}

int elfsym_imports(const char *path, elfsym_import_cb cb, void *ctx)
{
	struct table_walk w = { .import_cb = cb, .ctx = ctx };

	return each_table(path, SHT_RELA, import_table, &w);
}

/* A dynamic symbol table's functions that other modules can bind to */
static int export_table(const struct elf_file *f, const GElf_Shdr *sh, Elf_Data *data,
			struct table_walk *w)
{
	size_t n = data->d_size / sh->sh_entsize;
	int err = 0;

	for (size_t i = 1; i < n && i < INT_MAX && !err; i++) {
		struct elf_func fn = {};
		GElf_Sym sym;

		if (!gelf_getsym(data, (int)i, &sym) || !sym_is_func(&sym) ||
		    GELF_ST_BIND(sym.st_info) == STB_LOCAL ||
		    !(fn.name = elf_strptr(f->elf, sh->sh_link, sym.st_name)) ||
		    !vaddr_to_off(f->ph, f->phnum, f->size, sym.st_value, &fn.file_off))
			continue;
		fn.vaddr = sym.st_value;
		fn.size = sym.st_size;
		fn.ifunc = GELF_ST_TYPE(sym.st_info) == STT_GNU_IFUNC;
		err = w->func_cb(&fn, w->ctx);
	}
	return err;
}

int elfsym_exports(const char *path, elfsym_cb cb, void *ctx)
{
	struct table_walk w = { .func_cb = cb, .ctx = ctx };

	return each_table(path, SHT_DYNSYM, export_table, &w);
}

int elfsym_segments(const char *path, struct elf_seg **segs)
{
	struct elf_file f;
	int err = elf_file_open(path, &f), n = 0;

	*segs = NULL;
	if (err)
		return err;
	*segs = calloc(f.phnum ? f.phnum : 1, sizeof(**segs));
	if (!*segs) {
		elf_file_close(&f);
		return -ENOMEM;
	}
	for (size_t i = 0; i < f.phnum; i++) {
		const GElf_Phdr *ph = &f.ph[i];

		/* as vaddr_to_off: only what the file holds */
		if (ph->p_type != PT_LOAD || ph->p_offset > f.size)
			continue;
		(*segs)[n++] = (struct elf_seg){ ph->p_vaddr,
			ph->p_filesz < f.size - ph->p_offset ? ph->p_filesz : f.size - ph->p_offset,
			ph->p_offset };
	}
	elf_file_close(&f);
	return n;
}
