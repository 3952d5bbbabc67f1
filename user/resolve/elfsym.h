/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ELF function symbol resolution (libelf). The files are chosen by the traced process: every
 * offset and size read from them is checked before use.
 */
#ifndef SPYRE_ELFSYM_H
#define SPYRE_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>

struct elf_func {
	const char *name;	/* symbol name as stored (mangled for C++) */
	const char *qualname;	/* demangled, without parameter list ("flex::RuntimeStream::sync");
				 * equals name for C symbols; never NULL */
	unsigned long vaddr;	/* st_value */
	unsigned long size;	/* st_size */
	unsigned long file_off;	/* file offset of the first instruction (of the global entry) */
	bool endbr;		/* first instruction is endbr64 (f3 0f 1e fa) */
	/* ppc64le: the local entry's distance from the global one (where the entry probe goes:
	 * calls within the module branch to it); 0 elsewhere */
	unsigned long local_entry;
	/*
	 * Compiler-made part or copy ("foo.cold", "_Z3fooi.constprop.0"), not the entry of the
	 * function named in qualname; for mangled names qualname keeps " [clone .cold]".
	 */
	bool clone;
	bool ifunc;		/* elfsym_exports only: STT_GNU_IFUNC */
};

typedef int (*elfsym_cb)(const struct elf_func *f, void *ctx);

/*
 * Call @cb for every defined STT_FUNC / STT_GNU_IFUNC symbol with a non-zero address in .dynsym
 * and .symtab, in address order; a (name, vaddr) pair seen in both tables is reported once.
 * Return non-zero from the callback to stop; that value is returned. Errors: -errno (-ENOENT
 * missing file, -ENOEXEC not a usable ELF).
 */
int elfsym_foreach(const char *path, elfsym_cb cb, void *ctx);
/* Same, from an image in memory (used by the fuzzer and tests). */
int elfsym_foreach_mem(const void *buf, size_t len, elfsym_cb cb, void *ctx);

/*
 * The DT_SONAME of the ELF file at @path (the name a library is linked against, what `ldd`
 * prints: "libstdc++.so.6" for libstdc++.so.6.0.30), into @out; "" when it has none. Returns 0
 * or -errno (-ENOEXEC: not a usable ELF). The _mem variant reads an image in memory.
 */
int elfsym_soname(const char *path, char *out, size_t len);
int elfsym_soname_mem(const void *buf, size_t size, char *out, size_t len);

/*
 * For following tail calls (tailcall.h) across libraries, each file read once, nothing
 * demangled:
 * - elfsym_imports: @cb(slot, name) for each GOT slot the dynamic linker fills with a
 *   symbol's address (x86-64 R_X86_64_JUMP_SLOT and GLOB_DAT relocations, s390x R_390_...).
 * - elfsym_exports: @cb for each function other modules can bind to (global or weak, defined,
 *   in .dynsym): name, vaddr, size, file_off set, qualname NULL; f->ifunc for an IFUNC (its
 *   symbol is the resolver, not the code calls run).
 * - elfsym_segments: the file-backed part of each PT_LOAD, to find the file offset of a vaddr:
 *   their count and *@segs (malloc'd).
 * 0 (or the callback's non-zero value, or the count), -ENOEXEC (no usable ELF), -errno.
 */
struct elf_seg {
	unsigned long vaddr, filesz, off;
};
typedef int (*elfsym_import_cb)(unsigned long slot, const char *name, void *ctx);
int elfsym_imports(const char *path, elfsym_import_cb cb, void *ctx);
int elfsym_exports(const char *path, elfsym_cb cb, void *ctx);
int elfsym_segments(const char *path, struct elf_seg **segs);
/*
 * The GNU build id of the ELF file at @path (its NT_GNU_BUILD_ID note, what `file` and the
 * kernel's stack maps show) into @out: its length (20 for SHA-1 ids), -ENOENT when it has
 * none or a longer one than @cap, -ENOEXEC, -errno.
 */
int elfsym_build_id(const char *path, unsigned char *out, size_t cap);
/*
 * The ELF file open at @fd checked before libelf opens it (libelf allocates a descriptor for
 * every section header it claims): its section and program header tables inside the file, at
 * most 4,096 of each. 0 or -ENOEXEC. The functions above check their files themselves.
 */
int elfsym_check_fd(int fd);
/* Like elfsym_foreach without demangling: qualname is the stored name. */
int elfsym_foreach_raw(const char *path, elfsym_cb cb, void *ctx);

#endif
