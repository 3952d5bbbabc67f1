// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Finding a running process's CPython interpreter: no ptrace, no restart, only /proc/PID/maps,
 * the ELF files it maps and its memory (process_vm_readv).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "resolve/pyrt.h"
#include "resolve/procmaps.h"
#include "resolve/elfsym.h"

/*
 * The per-version table: offsetof() of each field on x86-64, compiled with Py_BUILD_CORE against
 * each version's own headers: 3.11 Debian bookworm's python3.11-dev (3.11.2), 3.12 and 3.13
 * pyenv's builds (3.12.1, 3.13.0). The structs: Include/internal/pycore_runtime.h
 * (_PyRuntimeState: interpreters.head), Include/internal/pycore_interp.h (PyInterpreterState:
 * threads.head), Include/cpython/pystate.h (PyThreadState: next, cframe or, 3.13,
 * current_frame, native_thread_id; _PyCFrame: current_frame), Include/internal/pycore_frame.h
 * (_PyInterpreterFrame: f_code or, 3.13, f_executable; previous; prev_instr or, 3.13, instr_ptr;
 * owner), Include/cpython/code.h (PyCodeObject), Include/cpython/unicodeobject.h and
 * bytesobject.h. The internal structs keep their layout within a minor version (3.11.x) and
 * change between them (Debian trixie's 3.13.5: its _Py_DebugOffsets give the 3.13 row's
 * offsets of every field they describe, and 3.13.0's struct sizes but _PyRuntimeState's and
 * PyInterpreterState's, grown at their ends). The location table (co_linetable) has one format
 * in all three.
 */
static const struct py_offsets py_table[] = {
	{
		.major = 3, .minor = 11,
		.rt_interp_head = 40, .interp_threads = 16, .ts_next = 8, .ts_native_tid = 160,
		.ts_cframe = 56, .cframe_frame = 8,
		.f_code = 32, .f_previous = 48, .f_prev_instr = 56, .f_owner = 0,
		.co_filename = 112, .co_qualname = 128, .co_linetable = 136,
		.co_firstlineno = 72, .co_firsttraceable = 168, .co_code_adaptive = 184,
		.ob_type = 8, .tp_name = 24, .uni_length = 16, .uni_state = 32,
		.uni_ascii_data = 48, .uni_compact_data = 72, .bytes_size = 16, .bytes_data = 32,
	},
	{
		.major = 3, .minor = 12,
		.rt_interp_head = 40, .interp_threads = 72, .ts_next = 8, .ts_native_tid = 144,
		.ts_cframe = 56, .cframe_frame = 0,
		.f_code = 0, .f_previous = 8, .f_prev_instr = 56, .f_owner = 70,
		.co_filename = 112, .co_qualname = 128, .co_linetable = 136,
		.co_firstlineno = 68, .co_firsttraceable = 176, .co_code_adaptive = 192,
		.ob_type = 8, .tp_name = 24, .uni_length = 16, .uni_state = 32,
		.uni_ascii_data = 40, .uni_compact_data = 56, .bytes_size = 16, .bytes_data = 32,
	},
	{
		.major = 3, .minor = 13,
		.rt_interp_head = 632, .interp_threads = 7344, .ts_next = 8, .ts_native_tid = 160,
		.ts_cframe = 72, .no_cframe = true,
		.f_code = 0, .f_previous = 8, .f_prev_instr = 56, .f_owner = 70,
		.co_filename = 112, .co_qualname = 128, .co_linetable = 136,
		.co_firstlineno = 68, .co_firsttraceable = 184, .co_code_adaptive = 200,
		.ob_type = 8, .tp_name = 24, .uni_length = 16, .uni_state = 32,
		.uni_ascii_data = 40, .uni_compact_data = 56, .bytes_size = 16, .bytes_data = 32,
	},
};

const struct py_offsets *py_offsets_for(unsigned int major, unsigned int minor)
{
	for (size_t i = 0; i < sizeof(py_table) / sizeof(py_table[0]); i++)
		if (py_table[i].major == major && py_table[i].minor == minor)
			return &py_table[i];
	return NULL;
}

int pyrt_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* What the dynamic symbol table of one file says. */
struct py_syms {
	uint64_t runtime, version;	/* st_value of _PyRuntime, Py_Version (0: none) */
	uint64_t load_vaddr;		/* the first PT_LOAD's p_vaddr, page-aligned */
};

/* The symbols of the file open at @fd (closed here): 0, -ENOENT without _PyRuntime in .dynsym. */
static int read_syms(int fd, struct py_syms *s)
{
	Elf_Scn *scn = NULL;
	size_t nph = 0;
	bool load = false;
	int err = -ENOENT;
	Elf *e;

	memset(s, 0, sizeof(*s));
	elf_version(EV_CURRENT);
	/*
	 * a file the process named python3*: its headers checked before libelf allocates them;
	 * not an ELF file we read (a script, a claim of millions of sections): it exports none
	 */
	if (elfsym_check_fd(fd)) {
		close(fd);
		return -ENOENT;
	}
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e) {
		close(fd);
		return -EINVAL;
	}
	if (!elf_getphdrnum(e, &nph)) {
		for (size_t i = 0; i < nph && !load; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_LOAD) {
				s->load_vaddr = ph.p_vaddr & ~(uint64_t)4095;
				load = true;
			}
		}
	}
	while (load && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!name)
				continue;
			if (!strcmp(name, "_PyRuntime"))
				s->runtime = sym.st_value;
			else if (!strcmp(name, "Py_Version"))
				s->version = sym.st_value;
		}
	}
	if (s->runtime)
		err = 0;
	elf_end(e);
	close(fd);
	return err;
}

/*
 * The candidates: files whose name says Python (python3.11, libpython3.11.so.1.0), in the order
 * they are mapped. A python binary linked with a shared libpython exports nothing itself.
 */
#define PY_MAX_CANDIDATES	4
struct find_ctx {
	struct {
		char path[256];
		uint64_t base, end;	/* its mapping at file offset 0 */
	} c[PY_MAX_CANDIDATES];
	int n;
};

static int find_cb(const struct map_entry *m, void *arg)
{
	struct find_ctx *c = arg;
	const char *b = path_basename(m->path);

	if (c->n >= PY_MAX_CANDIDATES || m->offset || m->path[0] != '/' ||
	    (strncmp(b, "python3", 7) && strncmp(b, "libpython3", 10)))
		return 0;
	for (int i = 0; i < c->n; i++)
		if (!strcmp(c->c[i].path, m->path))
			return 0;
	snprintf(c->c[c->n].path, sizeof(c->c[0].path), "%s", m->path);
	c->c[c->n].base = m->start;
	c->c[c->n].end = m->end;
	c->n++;
	return 0;
}

int pyrt_find(pid_t pid, const char *procfs, struct py_proc *out, char *why, size_t whylen)
{
	struct find_ctx c = { .n = 0 };
	struct py_syms s;
	char path[300], file[320];
	uint64_t ver = 0, base = 0;
	bool unopened = false;
	const char *b;
	FILE *f;
	int err = -ENOENT, fd, i;

	memset(out, 0, sizeof(*out));
	out->pid = pid;
	snprintf(path, sizeof(path), "%s/%d/maps", procfs, pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	err = procmaps_parse(f, find_cb, &c);
	fclose(f);
	if (err < 0)
		return err;
	if (!c.n) {
		snprintf(why, whylen, "no python3* or libpython3* mapped");
		return -ENOENT;
	}
	/* the first that exports _PyRuntime: a static binary's, else its libpython's */
	for (i = 0, err = -ENOENT; i < c.n && err == -ENOENT; i++) {
		/*
		 * The mapped file itself (map_files), wherever the process's root is: a chrooted
		 * process's maps name its files as our root sees them (/srv/root/usr/bin/python3),
		 * not as its own does. Else through the process's root: a container's maps name
		 * them as the container sees them, and its interpreter is not the host's.
		 */
		snprintf(file, sizeof(file), "%s/%d/map_files/%llx-%llx", procfs, pid,
			 (unsigned long long)c.c[i].base, (unsigned long long)c.c[i].end);
		fd = open(file, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			snprintf(file, sizeof(file), "%s/%d/root%s", procfs, pid, c.c[i].path);
			fd = open(file, O_RDONLY | O_CLOEXEC);
		}
		if (fd < 0) {
			/* said unless a later one exports _PyRuntime; not "exports none" */
			if (!unopened)
				snprintf(why, whylen, "%s: %s", c.c[i].path, strerror(errno));
			unopened = true;
			continue;
		}
		err = read_syms(fd, &s);
		if (err && err != -ENOENT)
			snprintf(why, whylen, "%s: %s", c.c[i].path, strerror(-err));
	}
	if (err == -ENOENT) {
		if (!unopened)
			snprintf(why, whylen, "%s%s exports no _PyRuntime (stripped of its "
				 "dynamic symbols, or not CPython)", c.c[0].path,
				 c.n > 1 ? " nor the other Python files mapped" : "");
		return -ENOENT;
	}
	if (err < 0)
		return err;
	i--;
	snprintf(out->path, sizeof(out->path), "%s", c.c[i].path);
	base = c.c[i].base - s.load_vaddr;
	out->runtime = base + s.runtime;
	/* Py_Version (3.11+): PY_VERSION_HEX, 0x030b02f0 for 3.11.2 */
	if (s.version && !pyrt_read(pid, base + s.version, &ver, sizeof(ver))) {
		out->major = (ver >> 24) & 0xff;
		out->minor = (ver >> 16) & 0xff;
	} else {
		/* before 3.11: the file's name says the version (python3.10, libpython3.9.so) */
		b = path_basename(out->path);
		b += strncmp(b, "lib", 3) ? 0 : 3;
		if (sscanf(b, "python%u.%u", &out->major, &out->minor) != 2)
			out->major = out->minor = 0;
	}
	out->off = py_offsets_for(out->major, out->minor);
	return 0;
}
