// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "common/array.h"
#include "common/intset.h"
#include "resolve/elfsym.h"
#include "resolve/globcap.h"
#include "common/util.h"
#include "common/log.h"
#include "resolve/nearmiss.h"
#include "resolve/procmaps.h"
#include "resolve/resolve.h"
#include "resolve/tailcall.h"

struct soname_slot {
	unsigned long ino;
	unsigned int dev_major, dev_minor;
	bool used;
	char *soname;		/* NULL: none (or not an ELF file) */
};

/*
 * Files whose DT_SONAME is remembered: a system-wide scan maps ~10,000 distinct files; past
 * this many, each is read again at each scan rather than held.
 */
int target_init(struct target *t, int pid, const struct probe_table *table, int max_probes)
{
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->table = table;
	t->max_probes = max_probes;
	t->spec_hits = calloc(table->cnt ? table->cnt : 1, sizeof(int));
	t->spec_libs = calloc(table->cnt ? table->cnt : 1, sizeof(int));
	t->spec_shadowed = calloc(table->cnt ? table->cnt : 1, sizeof(int));
	if (!t->spec_hits || !t->spec_libs || !t->spec_shadowed) {
		target_free(t);
		return -ENOMEM;
	}
	return 0;
}

void target_free(struct target *t)
{
	for (int i = 0; i < t->cnt; i++) {
		free(t->probes[i].name);
		free(t->probes[i].shared_name);
		free(t->probes[i].qualname);
		free(t->probes[i].symbol);
		retsite_free(&t->probes[i].sites);
	}
	for (int i = 0; i < t->nlibs; i++) {
		free(t->libs[i].path);
		free(t->libs[i].open_path);
		free(t->libs[i].soname);
		free(t->libs[i].alias);
		if (t->libs[i].fd > 0)
			close(t->libs[i].fd);
	}
	for (int i = 0; i < t->nfiles; i++) {
		free(t->files[i].path);
		free(t->files[i].open_path);
	}
	free(t->files);
	free(t->tails);
	free(t->probes);
	free(t->libs);
	free(t->spec_hits);
	free(t->spec_libs);
	free(t->names);
	free(t->spec_shadowed);
	for (int i = 0; i < t->nmapped; i++)
		free(t->mapped[i]);
	for (int i = 0; i < t->nalso; i++)
		free(t->also[i]);
	free(t->also);
	free(t->mapped);
	for (unsigned int i = 0; i < t->sonames_cap; i++)
		free(t->sonames[i].soname);
	free(t->sonames);
	memset(t, 0, sizeof(*t));
}

static bool lib_matches(const struct probe_spec *s, const char *name)
{
	return name && fnmatch(s->lib, name, 0) == 0;
}

/*
 * A library glob matches the file's basename, its DT_SONAME, or the name it was asked by
 * (@soname, @alias: NULL when none); one with '/' the file's @path (canonical, as the maps
 * and target_add_lib have it): `--probe /opt/lib/libflex.so:...` as perf and bpftrace take it.
 */
static bool lib_file_matches(const struct probe_spec *s, const char *path, const char *soname,
			     const char *alias)
{
	if (strchr(s->lib, '/'))
		return lib_matches(s, path);
	return lib_matches(s, path_basename(path)) || lib_matches(s, soname) ||
	       lib_matches(s, alias);
}

static bool lib_named(const struct probe_spec *s, const struct rlib *l)
{
	return lib_file_matches(s, l->path, l->soname, l->alias);
}

bool target_lib_matches(const struct target *t, int s, int l)
{
	return lib_named(&t->table->specs[s], &t->libs[l]);
}

#define SONAME_CACHE_MAX	(1u << 16)

static unsigned int file_hash(unsigned int maj, unsigned int min, unsigned long ino)
{
	unsigned long h = ino * 0x9e3779b97f4a7c15ull ^ ((unsigned long)maj << 20 | min);

	return (unsigned int)(h ^ h >> 29);
}

/* The slot of (dev, ino), or the empty one where it goes; NULL when the table is full. */
static struct soname_slot *soname_slot(struct target *t, unsigned int maj, unsigned int min,
				       unsigned long ino)
{
	unsigned int m, h;

	if ((t->nsonames + 1) * 2 > t->sonames_cap && t->sonames_cap < SONAME_CACHE_MAX) {
		unsigned int cap = t->sonames_cap ? t->sonames_cap * 2 : 256;
		struct soname_slot *v = calloc(cap, sizeof(*v)), *old = t->sonames;

		if (!v)
			return NULL;
		for (unsigned int i = 0; i < t->sonames_cap; i++) {
			if (!old[i].used)
				continue;
			for (h = file_hash(old[i].dev_major, old[i].dev_minor, old[i].ino) &
				 (cap - 1); v[h].used; h = (h + 1) & (cap - 1))
				;
			v[h] = old[i];
		}
		free(old);
		t->sonames = v;
		t->sonames_cap = cap;
	}
	if (!t->sonames_cap)
		return NULL;
	m = t->sonames_cap - 1;
	for (h = file_hash(maj, min, ino) & m; t->sonames[h].used; h = (h + 1) & m) {
		struct soname_slot *e = &t->sonames[h];

		if (e->ino == ino && e->dev_major == maj && e->dev_minor == min)
			return e;
	}
	return (t->nsonames + 1) * 2 > t->sonames_cap ? NULL : &t->sonames[h];
}

/*
 * The DT_SONAME of the file (dev, ino), opened as @open_path, read once per file (a library
 * is mapped in four pieces, and rescans see it again); NULL when it has none, or it is not a
 * readable ELF file. Read into @buf when it cannot be remembered.
 */
static const char *file_soname(struct target *t, const char *open_path, unsigned int maj,
			       unsigned int min, unsigned long ino, char *buf, size_t len)
{
	struct soname_slot *e = ino ? soname_slot(t, maj, min, ino) : NULL;

	if (e && e->used)
		return e->soname;
	if (elfsym_soname(open_path, buf, len))
		buf[0] = 0;
	if (e) {
		*e = (struct soname_slot){ .ino = ino, .dev_major = maj, .dev_minor = min,
					   .used = true, .soname = buf[0] ? strdup(buf) : NULL };
		t->nsonames++;
		return e->soname;
	}
	return buf[0] ? buf : NULL;
}

struct sym_ctx {
	struct target *t;
	int lib;
	const int *specs;	/* specs whose lib glob matched this library */
	int nspecs;
	int added;
	int err;
	int fd;			/* the library, open once for what its probes read of it */
};

/*
 * x86-64 only; other architectures report INSN_UNKNOWN. A single-stepped one that a program can
 * do instead is decoded into @e (entryinsn.h).
 */
static int classify_insn(int fd, unsigned long off, struct entry_insn *e)
{
	memset(e, 0, sizeof(*e));
#if defined(__x86_64__)
	unsigned char b[15] = {};	/* the longest x86 instruction */
	ssize_t n;

	if (fd < 0)
		return INSN_UNKNOWN;
	n = pread(fd, b, sizeof(b), off);
	if (n < 2)
		return INSN_UNKNOWN;
	/* push %reg, push %r8-%r15, nop5 (0f 1f 44 00 00) */
	if ((b[0] >= 0x50 && b[0] <= 0x57) || (b[0] == 0x41 && b[1] >= 0x50 && b[1] <= 0x57) ||
	    (n >= 5 && b[0] == 0x0f && b[1] == 0x1f && b[2] == 0x44 && !b[3] && !b[4]))
		return INSN_EMULATED;
	entry_insn_decode(b, (size_t)n, e);
	return INSN_SINGLESTEP;
#else
	return INSN_UNKNOWN;
#endif
}

/* A probe's reason when target_sites_off turned them all off (t->sites_off: the long one) */
#define SITES_OFF_WHY	"return sites off on this machine (the start-up self-test failed)"

/*
 * How @p's returns will be seen: its return instructions and tail jumps, or the kernel's
 * uretprobe (--uretprobes), or not at all when its body cannot be read safely (then its
 * entries are recorded as instants, see retsite.h).
 */
static void find_return(struct target *t, struct rprobe *p, const struct elf_func *f, int fd)
{
	int err;

	if (t->uretprobes) {
		p->ret = RET_URETPROBE;
		return;
	}
	if (t->sites_off) {
		p->sites.why = SITES_OFF_WHY;
		err = -ENOTSUP;
	} else if (fd < 0) {
		p->sites.why = "the library cannot be read";
		err = -EBADF;
	} else {
		err = retsite_find_fd(retsite_host_arch(), fd, f->file_off, f->size, f->vaddr,
				      &p->sites);
	}
	p->ret = err ? RET_NONE : RET_SITES;
	if (err)
		t->entry_only++;
}

int target_sites_off(struct target *t, const char *why)
{
	int n = 0;

	t->sites_off = why;
	for (int i = 0; i < t->cnt; i++) {
		struct rprobe *p = &t->probes[i];

		if (p->ret != RET_SITES || t->table->specs[p->spec].type != PROBE_SPAN)
			continue;
		retsite_free(&p->sites);
		p->sites.why = SITES_OFF_WHY;
		p->ret = RET_NONE;
		t->entry_only++;
		n++;
	}
	return n;
}

static int add_probe(struct sym_ctx *c, int spec, const struct elf_func *f, const char *matched,
		     const struct globcap *caps)
{
	struct target *t = c->t;
	struct rprobe *p;
	char *base;
	int err;

	/*
	 * aliases (C1/C2 constructors, ICF-folded functions) share an address: one probe there.
	 * Functions come in address order (elfsym_foreach): an alias follows its first name
	 * (looking through every probe took 0.2 s for 15,000 functions of libtorch_cpu.so).
	 */
	if (c->added && t->probes[t->cnt - 1].sym_off == f->file_off)
		return 0;
	if (t->cnt >= t->max_probes)
		return -E2BIG;
	if (array_reserve(&t->probes, &t->cap, (size_t)t->cnt + 1, sizeof(*t->probes), 32))
		return -ENOMEM;
	p = &t->probes[t->cnt];
	memset(p, 0, sizeof(*p));
	base = probe_name(&t->table->specs[spec], f->qualname, matched, caps);
	err = base ? target_distinct_name(t, c->lib, f, base, &p->name) : -ENOMEM;
	if (!err && strcmp(base, p->name))
		p->shared_name = base;
	else
		free(base);
	p->qualname = strdup(f->qualname);
	p->symbol = strdup(f->name);
	if (err || !p->qualname || !p->symbol || target_name_add(t, t->cnt)) {
		free(p->name);
		free(p->shared_name);
		free(p->qualname);
		free(p->symbol);
		return err ?: -ENOMEM;
	}
	target_mark_other_files(t, t->cnt);
	p->spec = spec;
	p->lib = c->lib;
	p->sym_off = f->file_off;
	p->endbr = f->endbr;
	/*
	 * endbr64 is single-stepped by the uprobe (~15 µs here); the instruction after it is
	 * usually a push (emulated, ~0.8 µs). [rsp] still holds the return address there, so a
	 * uretprobe at that offset is safe.
	 */
	p->attach_off = f->file_off + (f->endbr ? 4 : 0) + f->local_entry;
	p->insn = classify_insn(c->fd, p->attach_off, &p->entry);
	if (t->table->specs[spec].type == PROBE_SPAN)
		find_return(t, p, f, c->fd);
	t->cnt++;
	t->spec_hits[spec]++;
	t->libs[c->lib].nprobes++;
	c->added++;
	return 0;
}

static int on_sym(const struct elf_func *f, void *ctx)
{
	struct sym_ctx *c = ctx;
	bool owned = false;

	/* .cold/.part clones are pieces of a function, not entries: a probe there is wrong */
	if (f->clone)
		return 0;
	c->t->libs[c->lib].nfuncs++;
	for (int i = 0; i < c->nspecs; i++) {
		const struct probe_spec *s = &c->t->table->specs[c->specs[i]];
		const char *matched = f->qualname;
		struct globcap caps;

		if (!globcap_match(s->sym, matched, &caps)) {
			matched = f->name;
			if (!globcap_match(s->sym, matched, &caps))
				continue;
		}
		/* first matching spec owns the function; a later one that matches is no typo */
		if (owned) {
			c->t->spec_shadowed[c->specs[i]]++;
			continue;
		}
		c->err = add_probe(c, c->specs[i], f, matched, &caps);
		if (c->err)
			return 1;
		owned = true;
	}
	return 0;
}

int target_find_lib(const struct target *t, unsigned int maj, unsigned int min,
		    unsigned long ino, const char *path)
{
	for (int i = 0; i < t->nlibs; i++) {
		const struct rlib *l = &t->libs[i];

		if (ino ? (l->ino == ino && l->dev_major == maj && l->dev_minor == min)
			: !strcmp(l->path, path))
			return i;
	}
	return -1;
}

/* @name when it is one more name than @a and @b (either may be NULL), else NULL */
static const char *other_name(const char *name, const char *a, const char *b)
{
	return name && name[0] && (!a || strcmp(name, a)) && (!b || strcmp(name, b)) ? name :
	       NULL;
}

/*
 * Resolve a library not seen before, known as its path's basename, its DT_SONAME and @alias
 * (NULL: none); returns new probes or -errno.
 */
static int resolve_lib(struct target *t, const char *path, const char *open_path,
		       unsigned int maj, unsigned int min, unsigned long ino, const char *alias)
{
	const char *base = path_basename(path), *soname;
	struct sym_ctx c = { .t = t };
	char buf[PATH_MAX];
	struct rlib *l;
	int *specs, n = 0, err, first;

	if (target_find_lib(t, maj, min, ino, path) >= 0)
		return 0;
	soname = other_name(file_soname(t, open_path, maj, min, ino, buf, sizeof(buf)), base,
			    NULL);
	alias = other_name(alias, base, soname);
	specs = malloc(sizeof(int) * (t->table->cnt ? t->table->cnt : 1));
	if (!specs)
		return -ENOMEM;
	for (int i = 0; i < t->table->cnt; i++) {
		const struct probe_spec *sp = &t->table->specs[i];

		if (lib_file_matches(sp, path, soname, alias))
			specs[n++] = i;
	}
	if (!n) {
		free(specs);
		return 0;
	}
	if (array_reserve(&t->libs, &t->libs_cap, (size_t)t->nlibs + 1, sizeof(*t->libs), 8)) {
		free(specs);
		return -ENOMEM;
	}
	l = &t->libs[t->nlibs];
	memset(l, 0, sizeof(*l));
	l->path = strdup(path);
	l->open_path = strdup(open_path);
	l->soname = soname ? strdup(soname) : NULL;
	l->alias = alias ? strdup(alias) : NULL;
	l->ino = ino;
	l->dev_major = maj;
	l->dev_minor = min;
	if (!l->path || !l->open_path || (soname && !l->soname) || (alias && !l->alias)) {
		free(l->path);
		free(l->open_path);
		free(l->soname);
		free(l->alias);
		free(specs);
		return -ENOMEM;
	}
	if (t->pin_libs) {
		char fdpath[32];
		int fd = open(open_path, O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
			free(l->open_path);
			l->open_path = strdup(fdpath);
			l->fd = fd;
			if (!l->open_path) {
				close(fd);
				free(l->path);
				free(l->soname);
				free(l->alias);
				free(specs);
				return -ENOMEM;
			}
		}
	}
	c.lib = t->nlibs++;
	for (int i = 0; i < n; i++)
		t->spec_libs[specs[i]]++;
	c.specs = specs;
	c.nspecs = n;
	c.fd = open(open_path, O_RDONLY | O_CLOEXEC);
	first = t->cnt;
	err = elfsym_foreach(open_path, on_sym, &c);
	if (!c.err && c.added)
		c.err = target_name_overloads(t, first);
	if (c.fd >= 0)
		close(c.fd);
	free(specs);
	if (c.err)
		return c.err;
	if (err < 0) {
		/* an unreadable library is reported by `list`, not fatal for the others */
		l->err = err;
		return 0;
	}
	return c.added;
}

/* Remember a mapped file (once): where tail calls may go (target_follow_tails). */
static int note_file(struct target *t, const char *path, const char *open_path, unsigned int maj,
		     unsigned int min, unsigned long ino)
{
	struct mapped_file *m;

	for (int i = 0; i < t->nfiles; i++)
		if (t->files[i].ino == ino && t->files[i].dev_major == maj &&
		    t->files[i].dev_minor == min && !strcmp(t->files[i].path, path))
			return 0;
	if (array_reserve(&t->files, &t->files_cap, (size_t)t->nfiles + 1, sizeof(*t->files), 16))
		return -ENOMEM;
	m = &t->files[t->nfiles];
	m->path = strdup(path);
	m->open_path = strdup(open_path);
	if (!m->path || !m->open_path) {
		free(m->path);
		free(m->open_path);
		return -ENOMEM;
	}
	m->ino = ino;
	m->dev_major = maj;
	m->dev_minor = min;
	t->nfiles++;
	return 0;
}

/* Remember a name (once) in a list of names for the near misses of a library glob. */
static void note_name(char ***v, int *n, size_t *cap, const char *name)
{
	/* a system-wide scan sees thousands of files: enough to suggest from */
	if (*n >= 4096)
		return;
	for (int i = 0; i < *n; i++)
		if (!strcmp((*v)[i], name))
			return;
	if (array_reserve(v, cap, (size_t)*n + 1, sizeof(**v), 64))
		return;
	if (((*v)[*n] = strdup(name)))
		(*n)++;
}

/* A mapped file's basename: listed when a library glob matches none, and offered near */
static void note_mapped(struct target *t, const char *base)
{
	note_name(&t->mapped, &t->nmapped, &t->mapped_cap, base);
}

/* Another name of a mapped file (DT_SONAME, alias): offered near, not listed */
static void note_also(struct target *t, const char *name)
{
	note_name(&t->also, &t->nalso, &t->also_cap, name);
}

struct maps_ctx {
	struct target *t;
	const char *map_files;
	int added;
	int err;
	bool runtime;		/* a span or instant line names a file mapped */
};

static int on_map(const struct map_entry *e, void *ctx)
{
	struct maps_ctx *c = ctx;
	char open_path[PATH_MAX], buf[PATH_MAX];
	const char *base, *soname;
	bool any = false, runtime = false;
	int n;

	if (e->path[0] != '/' || !e->inode)
		return 0;
	base = path_basename(e->path);
	note_mapped(c->t, base);
	if (c->map_files) {
		if (snprintf(open_path, sizeof(open_path), "%s/%lx-%lx", c->map_files, e->start,
			     e->end) >= (int)sizeof(open_path))
			return 0;
	} else {
		if (snprintf(open_path, sizeof(open_path), "%s", e->path) >= (int)sizeof(open_path))
			return 0;
	}
	if (note_file(c->t, e->path, open_path, e->dev_major, e->dev_minor, e->inode)) {
		c->err = -ENOMEM;
		return 1;
	}
	/* libstdc++.so.6.0.30 is libstdc++.so.6 to the loader, ldd and the user */
	soname = other_name(file_soname(c->t, open_path, e->dev_major, e->dev_minor, e->inode,
					buf, sizeof(buf)), base, NULL);
	if (soname)
		note_also(c->t, soname);
	for (int i = 0; i < c->t->table->cnt && !runtime; i++) {
		const struct probe_spec *sp = &c->t->table->specs[i];

		if (!lib_file_matches(sp, e->path, soname, NULL))
			continue;
		any = true;
		/* the unwinders' and catch lines name what every C++ program maps */
		runtime = sp->type == PROBE_SPAN || sp->type == PROBE_INSTANT;
	}
	c->runtime |= runtime;
	if (!any)
		return 0;
	n = resolve_lib(c->t, e->path, open_path, e->dev_major, e->dev_minor, e->inode, NULL);
	if (n < 0) {
		c->err = n;
		return 1;
	}
	c->added += n;
	return 0;
}

/* target_scan_maps, and whether the process maps the runtime (@runtime, may be NULL) */
static int scan_maps(struct target *t, FILE *maps, const char *map_files, bool *runtime)
{
	struct maps_ctx c = { .t = t, .map_files = map_files };
	int err;

	err = procmaps_parse(maps, on_map, &c);
	if (runtime)
		*runtime = c.runtime;
	if (c.err)
		return c.err;
	if (err < 0)
		return err;
	err = target_follow_tails(t);
	return err ? err : c.added;
}

int target_scan_maps(struct target *t, FILE *maps, const char *map_files)
{
	return scan_maps(t, maps, map_files, NULL);
}

int target_scan(struct target *t)
{
	char path[64], mf[64];
	FILE *f;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/maps", t->pid);
	snprintf(mf, sizeof(mf), "/proc/%d/map_files", t->pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	err = target_scan_maps(t, f, mf);
	fclose(f);
	return err;
}

struct runtime_ctx {
	const struct probe_table *table;
	char *lib;
	size_t len;
};

static int on_runtime_map(const struct map_entry *e, void *ctx)
{
	struct runtime_ctx *c = ctx;

	if (e->path[0] != '/')
		return 0;
	for (int i = 0; i < c->table->cnt; i++) {
		const struct probe_spec *sp = &c->table->specs[i];

		/* the unwinders' and catch lines name what every C++ program maps */
		if ((sp->type == PROBE_SPAN || sp->type == PROBE_INSTANT) &&
		    lib_file_matches(sp, e->path, NULL, NULL)) {
			snprintf(c->lib, c->len, "%s", path_basename(e->path));
			return 1;
		}
	}
	return 0;
}

bool table_maps_runtime(const struct probe_table *table, FILE *maps, char *lib, size_t len)
{
	struct runtime_ctx c = { table, lib, len };

	return procmaps_parse(maps, on_runtime_map, &c) == 1;
}

int target_scan_procs(struct target *t, struct intset *seen, struct intset *jobs, bool all,
		      const char *procfs)
{
	struct dirent *de;
	int added = 0, self = getpid();
	DIR *d = opendir(procfs);

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[300], mf[300];
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		bool runtime;
		FILE *f;
		int n;

		if (*end || pid <= 0 || pid == self)
			continue;
		if (!all && intset_has(seen, pid))
			continue;
		if (intset_insert(seen, pid) < 0)
			break;
		snprintf(path, sizeof(path), "%s/%ld/maps", procfs, pid);
		snprintf(mf, sizeof(mf), "%s/%ld/map_files", procfs, pid);
		f = fopen(path, "re");
		if (!f)
			continue;	/* gone, or a kernel thread's empty maps */
		n = scan_maps(t, f, mf, &runtime);
		fclose(f);
		if (runtime && jobs && intset_insert(jobs, pid) < 0)
			n = -ENOMEM;
		if (n == -E2BIG || n == -ENOMEM) {
			closedir(d);
			return n;
		}
		if (n > 0)
			added += n;
	}
	closedir(d);
	return added;
}

int target_add_lib(struct target *t, const char *path, const char *alias)
{
	char real[PATH_MAX];
	struct stat st;

	/* the maps will name the file, not the symbolic link ldd or PATH went through */
	if (!realpath(path, real) || stat(real, &st))
		return -errno;
	if (!alias)
		alias = path_basename(path);
	note_mapped(t, path_basename(real));
	note_also(t, alias);
	if (note_file(t, real, real, major(st.st_dev), minor(st.st_dev), st.st_ino))
		return -ENOMEM;
	return resolve_lib(t, real, real, major(st.st_dev), minor(st.st_dev), st.st_ino, alias);
}

int target_warn_unreadable(struct target *t)
{
	int n = 0;

	for (int i = 0; i < t->nlibs; i++) {
		struct rlib *l = &t->libs[i];

		if (!l->err)
			continue;
		n++;
		if (l->warned)
			continue;
		l->warned = true;
		pr_err("cannot read runtime library %s: %s; its probes are not attached",
		       l->path, strerror(-l->err));
	}
	return n;
}

void target_warn_too_many(struct target *t, bool later)
{
	if (!later) {
		pr_err("more than %d functions match the probe table (the limit of --max-probes): "
		       "raise it (up to 1048576; each function costs 64 bytes of kernel memory "
		       "per CPU) or narrow the globs (`spyre-bpftrace list -p PID --max-probes N` "
		       "shows what they match)", t->max_probes);
		return;
	}
	if (t->too_many_warned)
		return;
	t->too_many_warned = true;
	pr_warn("libraries loaded later match more functions than the %d this run has room for "
		"(sized at start): those past it are not traced (--max-probes N reserves room for "
		"N at start)", t->max_probes);
}

bool target_spec_missing(const struct target *t, int s)
{
	bool readable = !t->spec_libs[s];

	if (s < t->user_from || t->spec_hits[s] || t->spec_shadowed[s])
		return false;
	/* libraries that matched but cannot be read: said as such (target_warn_unreadable) */
	for (int l = 0; l < t->nlibs && !readable; l++)
		readable = !t->libs[l].err && target_lib_matches(t, s, l);
	return readable;
}

struct miss_ctx {
	const struct probe_spec *sp;
	struct nearmiss *m;
};

static int offer_sym(const struct elf_func *f, void *ctx)
{
	struct miss_ctx *c = ctx;

	if (f->clone)
		return 0;
	return nearmiss_offer(c->m, c->sp->sym, f->qualname) ? 1 : 0;
}

const char *target_why_missing(const struct target *t, int s, char *buf, size_t len)
{
	const struct probe_spec *sp = &t->table->specs[s];
	struct nearmiss m = {};
	struct miss_ctx c = { sp, &m };
	char near[1024];
	size_t off = 0;
	int n = 0;

#define PUT(...)							\
	do {								\
		if (off < len)						\
			off += snprintf(buf + off, len - off, __VA_ARGS__); \
	} while (0)
	if (len)
		buf[0] = 0;
	if (!t->spec_libs[s]) {
		/* a path's near misses are the files of its name mapped from elsewhere */
		const char *pat = strchr(sp->lib, '/') ? path_basename(sp->lib) : sp->lib;

		PUT("no mapped library matches '%s'", sp->lib);
		for (int i = 0; i < t->nmapped; i++)
			nearmiss_offer(&m, pat, t->mapped[i]);
		for (int i = 0; i < t->nalso; i++)
			nearmiss_offer(&m, pat, t->also[i]);
		/* what the user can pick from: the first few, the count */
		for (int i = 0; i < t->nmapped && i < 6; i++)
			PUT("%s%s", i ? ", " : " (mapped: ", t->mapped[i]);
		if (t->nmapped > 6)
			PUT(", ... %d files in all", t->nmapped);
		if (t->nmapped)
			PUT(")");
	} else {
		PUT("no function matching '%s' in", sp->sym);
		for (int l = 0; l < t->nlibs; l++) {
			const struct rlib *lib = &t->libs[l];
			const char *base = path_basename(lib->path);

			if (!lib_named(sp, lib))
				continue;
			if (lib->err)
				PUT("%s %s (unreadable: %s)", n++ ? "," : "", base,
				    strerror(-lib->err));
			else
				PUT("%s %s (%d functions)", n++ ? "," : "", base, lib->nfuncs);
			if (!lib->err)
				elfsym_foreach(lib->open_path, offer_sym, &c);
		}
	}
	if (m.n)
		PUT("; near misses: %s", nearmiss_format(&m, near, sizeof(near)));
	else
		PUT("; no near misses");
#undef PUT
	nearmiss_free(&m);
	return buf;
}

int target_say_missing(const struct target *t, const char *prefix, bool mapped_only, bool *said)
{
	/* "warning: " makes it a warning; anything else is the error the run stops on */
	bool warn = !strcmp(prefix, "warning: ");
	char why[2048];
	int n = 0;

	for (int s = t->user_from; s < t->table->cnt; s++) {
		const struct probe_spec *sp = &t->table->specs[s];

		if (said[s] || !target_spec_missing(t, s) || (mapped_only && !t->spec_libs[s]))
			continue;
		said[s] = true;
		n++;
		log_msg(warn ? LOG_WARN : LOG_ERROR, "%s%s: %s %s resolves nowhere: %s",
			warn ? "" : prefix, sp->origin, sp->lib, sp->sym,
			target_why_missing(t, s, why, sizeof(why)));
	}
	return n;
}

/* "N functions in LIB, LIB" of spec @s: where it resolved. */
