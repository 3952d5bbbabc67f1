// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <inttypes.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <bpf/bpf.h>

#include "stream/ustack.h"
#include "resolve/demangle.h"
#include "stream/spyre_event_user.h"
#include "common/array.h"
#include "common/ohash.h"
#include "resolve/elfsym.h"
#include "resolve/procmaps.h"

#define BUILD_ID_MAX	BPF_BUILD_ID_SIZE

/* One function of a library: where its code is in the file, its stored (mangled) name. */
struct fsym {
	unsigned long off, size;
	char *name;
	char *qual;		/* demangled when first named; NULL: not yet */
};

/*
 * A file mapped by a traced process, known by its device and inode: its build id is a claim
 * (any file can carry another's), so a frame's build id names a file only among those its own
 * process maps.
 */
struct bfile {
	unsigned char id[BUILD_ID_MAX];
	int idlen;
	unsigned long dev, ino;	/* the file first mapped with it: known without reading it */
	/*
	 * Where to read it: through the process that mapped it first (map_files, also for a
	 * chrooted process), its path under that process's root, its path here
	 */
	char *paths[3];
	char base[64];		/* its file name, for the frame's "(LIBRARY)" */
	bool loaded;		/* symbols read (or tried) */
	unsigned long fsize;	/* its size (0: unknown): a larger offset is no code of it */
	struct fsym *syms;	/* by off */
	size_t nsyms, capsyms;
};

/* A mapping of a process, with the library it maps (-1: none known). */
struct pmap {
	unsigned long start, end, off;
	int file;
	bool exec;
};

struct proc_maps {
	uint32_t pid;
	struct pmap *maps;
	size_t n, cap;
	uint64_t scanned_ns;	/* read at (CLOCK_MONOTONIC) */
	uint32_t gen;		/* bumped when a read finds the mappings changed */
};

/* A caller's return address, named once per process and mapping. */
struct named_ip {
	uint64_t ip;		/* its key in ustack.ips (never 0: 0 is an empty slot) */
	uint32_t pid;
	uint32_t gen;		/* the process's mappings it was named from (proc_maps.gen) */
	char *name;
};

/*
 * A stack read from the map, named for one process's files: the kernel's stack ids are shared
 * by every process whose frames have the same build ids and offsets, and another process may
 * map other files under those ids (named again for it then).
 */
struct named_stack {
	int n;
	char **names;
	const char **v;
	uint32_t pid, gen;	/* named for, with its mappings then */
};

struct ustack {
	int map_fd;
	const char *procfs;
	struct bfile *files;
	size_t nfiles, capfiles;
	struct proc_maps *procs;
	size_t nprocs, capprocs;
	struct named_stack *stacks;	/* by id, SPYRE_USTACK_MAX of them */
	struct ohash ips;		/* named_ip by (pid, ip) */
	uint64_t unnamed, cut;
};

struct ustack *ustack_new(int map_fd, const char *procfs)
{
	struct ustack *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->stacks = calloc(SPYRE_USTACK_MAX, sizeof(*u->stacks));
	if (!u->stacks) {
		free(u);
		return NULL;
	}
	u->map_fd = map_fd;
	u->procfs = procfs ? procfs : "/proc";
	u->ips = OHASH_INIT(struct named_ip, ip, pid);
	return u;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void ustack_free(struct ustack *u)
{
	struct named_ip *ip;

	if (!u)
		return;
	for (size_t i = 0; i < u->nfiles; i++) {
		for (size_t j = 0; j < u->files[i].nsyms; j++) {
			free(u->files[i].syms[j].name);
			free(u->files[i].syms[j].qual);
		}
		free(u->files[i].syms);
		for (int j = 0; j < 3; j++)
			free(u->files[i].paths[j]);
	}
	for (size_t i = 0; i < u->nprocs; i++)
		free(u->procs[i].maps);
	for (int i = 0; i < SPYRE_USTACK_MAX; i++) {
		for (int j = 0; j < u->stacks[i].n; j++)
			free(u->stacks[i].names[j]);
		free(u->stacks[i].names);
		free(u->stacks[i].v);
	}
	for (size_t i = 0; (ip = ohash_next(&u->ips, &i));)
		free(ip->name);
	ohash_free(&u->ips);
	free(u->stacks);
	free(u->files);
	free(u->procs);
	free(u);
}

void ustack_counts(const struct ustack *u, uint64_t *unnamed, uint64_t *cut)
{
	*cut = u ? u->cut : 0;
	*unnamed = u ? u->unnamed : 0;
}

static int file_by_inode(const struct ustack *u, unsigned long dev, unsigned long ino)
{
	for (size_t i = 0; i < u->nfiles; i++)
		if (u->files[i].ino == ino && u->files[i].dev == dev)
			return (int)i;
	return -1;
}

/*
 * The file of build id @id whose code at file offset @off process @pm maps executable; -1:
 * none, -2: two different files claim it there (which one the kernel read it from is not known:
 * the frame goes unnamed). A file that claims another's build id without its code mapped there
 * (a page of it read, a copy mapped elsewhere) is not taken for it.
 */
static int proc_file(const struct ustack *u, const struct proc_maps *pm, const unsigned char *id,
		     int len, unsigned long off)
{
	int found = -1;

	for (size_t i = 0; pm && i < pm->n; i++) {
		const struct pmap *m = &pm->maps[i];
		const struct bfile *f;

		if (m->file < 0 || m->file == found || !m->exec || off < m->off ||
		    off - m->off >= m->end - m->start)
			continue;
		f = &u->files[pm->maps[i].file];
		if (f->idlen != len || memcmp(f->id, id, (size_t)len))
			continue;
		if (found >= 0)
			return -2;
		found = m->file;
	}
	return found;
}

/* Process @pid's mappings as last read (NULL: never read). */
static struct proc_maps *proc_of(struct ustack *u, uint32_t pid)
{
	for (size_t i = 0; i < u->nprocs; i++)
		if (u->procs[i].pid == pid)
			return &u->procs[i];
	return NULL;
}

/* The file @dev, @ino of build id @id, mapped from @path, read through @mf or @alt. */
static int add_file(struct ustack *u, const unsigned char *id, int len, const char *mf,
		    const char *alt, const char *path, unsigned long dev, unsigned long ino)
{
	struct bfile *f;
	int i = file_by_inode(u, dev, ino);

	if (i >= 0)
		return i;
	if (array_reserve(&u->files, &u->capfiles, u->nfiles + 1, sizeof(*u->files), 16))
		return -ENOMEM;
	f = &u->files[u->nfiles];
	memset(f, 0, sizeof(*f));
	memcpy(f->id, id, (size_t)len);
	f->idlen = len;
	f->dev = dev;
	f->ino = ino;
	f->paths[0] = strdup(mf);
	f->paths[1] = strdup(alt);
	f->paths[2] = strdup(path);
	snprintf(f->base, sizeof(f->base), "%s", path_basename(path));
	if (!f->paths[0] || !f->paths[1] || !f->paths[2])
		return -ENOMEM;
	return (int)u->nfiles++;
}

struct scan {
	struct ustack *u;
	struct proc_maps *pm;
	uint32_t pid;
	/* the last file-backed mapping's file: a library's mappings come one after another */
	unsigned long last_ino, last_dev;
	int last_file;
};

static int scan_map(const struct map_entry *e, void *ctx)
{
	struct scan *s = ctx;
	struct proc_maps *pm = s->pm;
	unsigned long dev = (unsigned long)e->dev_major << 20 | e->dev_minor;
	unsigned char id[BUILD_ID_MAX];
	char mf[96], alt[4096];
	int file = -1, len;

	if (!e->inode || e->path[0] != '/')
		return 0;
	if (e->inode == s->last_ino && dev == s->last_dev) {
		file = s->last_file;
	} else if ((file = file_by_inode(s->u, dev, e->inode)) >= 0) {
		/* read before (this process again, or another one mapping it): not reopened */
		s->last_ino = e->inode;
		s->last_dev = dev;
		s->last_file = file;
	} else {
		/* map_files reaches the mapped file itself, also for a chrooted process */
		snprintf(mf, sizeof(mf), "%s/%u/map_files/%lx-%lx", s->u->procfs, s->pid, e->start,
			 e->end);
		snprintf(alt, sizeof(alt), "%s/%u/root%s", s->u->procfs, s->pid, e->path);
		len = elfsym_build_id(mf, id, sizeof(id));
		if (len < 0)
			len = elfsym_build_id(alt, id, sizeof(id));
		if (len > 0)
			file = add_file(s->u, id, len, mf, alt, e->path, dev, e->inode);
		s->last_ino = e->inode;
		s->last_dev = dev;
		s->last_file = file;
	}
	if (file < -1)
		return file;
	if (array_reserve(&pm->maps, &pm->cap, pm->n + 1, sizeof(*pm->maps), 32))
		return -ENOMEM;
	pm->maps[pm->n++] = (struct pmap){ .start = e->start, .end = e->end, .off = e->offset,
					   .file = file, .exec = e->perms[2] == 'x' };
	return 0;
}

static bool same_maps(const struct proc_maps *a, const struct proc_maps *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->maps[i].start != b->maps[i].start || a->maps[i].end != b->maps[i].end ||
		    a->maps[i].off != b->maps[i].off || a->maps[i].file != b->maps[i].file ||
		    a->maps[i].exec != b->maps[i].exec)
			return false;
	return true;
}

/* Read process @pid's mappings (again) and the build ids of the files they map. */
static struct proc_maps *scan_proc(struct ustack *u, uint32_t pid)
{
	struct proc_maps *pm = NULL, fresh = { .pid = pid };
	struct scan s = { .u = u, .pid = pid, .last_file = -1 };
	char path[64];
	FILE *f;

	for (size_t i = 0; i < u->nprocs; i++)
		if (u->procs[i].pid == pid)
			pm = &u->procs[i];
	if (!pm) {
		if (array_reserve(&u->procs, &u->capprocs, u->nprocs + 1, sizeof(*u->procs), 8))
			return NULL;
		pm = &u->procs[u->nprocs++];
		memset(pm, 0, sizeof(*pm));
		pm->pid = pid;
	}
	snprintf(path, sizeof(path), "%s/%u/maps", u->procfs, pid);
	pm->scanned_ns = mono_ns();
	f = fopen(path, "re");
	if (!f)
		return pm;	/* gone: what was read before stays */
	s.pm = &fresh;
	/*
	 * A process on its way out shows no mappings, or only those read before it went (its
	 * executable's, not its libraries': seen in the 6.12 guest's ustack step as a library's
	 * frames left unnamed): what was read before stays then
	 */
	if (procmaps_parse_whole(f, scan_map, &s))
		fresh.n = 0;
	fclose(f);
	if (fresh.n) {
		if (!same_maps(&fresh, pm))
			pm->gen++;	/* dlclose, dlopen: names taken from the old ones go */
		free(pm->maps);
		pm->maps = fresh.maps;
		pm->n = fresh.n;
		pm->cap = fresh.cap;
	} else {
		free(fresh.maps);
	}
	return pm;
}

void ustack_add_proc(struct ustack *u, uint32_t pid)
{
	if (u)
		scan_proc(u, pid);
}

static int sym_add(const struct elf_func *fn, void *ctx)
{
	struct bfile *f = ctx;

	if (!fn->file_off || array_reserve(&f->syms, &f->capsyms, f->nsyms + 1, sizeof(*f->syms),
					   1024))
		return 0;
	f->syms[f->nsyms] = (struct fsym){ .off = fn->file_off, .size = fn->size,
					   .name = strdup(fn->name) };
	if (f->syms[f->nsyms].name)
		f->nsyms++;
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* The symbols of @f, read once, from the first of its paths whose build id is still its own. */
static void load_syms(struct bfile *f)
{
	unsigned char id[BUILD_ID_MAX];
	struct stat st;

	if (f->loaded)
		return;
	f->loaded = true;
	for (int i = 0; i < 3; i++) {
		if (elfsym_build_id(f->paths[i], id, sizeof(id)) != f->idlen ||
		    memcmp(id, f->id, (size_t)f->idlen))
			continue;
		if (stat(f->paths[i], &st) || elfsym_foreach_raw(f->paths[i], sym_add, f) < 0)
			continue;	/* gone in between (its process exited): the next path */
		f->fsize = (unsigned long)st.st_size;
		break;
	}
	qsort(f->syms, f->nsyms, sizeof(*f->syms), sym_cmp);
}

/* The function of @f that holds file offset @off, else NULL. */
static struct fsym *sym_at(struct bfile *f, unsigned long off)
{
	size_t lo = 0, hi;

	load_syms(f);
	hi = f->nsyms;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (f->syms[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the last one starting at or before off; a later alias of it may be the sized one */
	for (size_t i = lo; i-- > 0 && f->syms[i].off == f->syms[lo - 1].off;)
		if (off < f->syms[i].off + (f->syms[i].size ? f->syms[i].size : 1))
			return &f->syms[i];
	return NULL;
}

/*
 * Offset @off of library @f named into @buf; false when it is past the file's end: no code, a
 * frame the frame-pointer walk made up from a register that held no frame pointer.
 */
static bool name_in_file(struct ustack *u, struct bfile *f, unsigned long off, char *buf,
			 size_t len)
{
	struct fsym *s = sym_at(f, off);

	if (f->fsize && off >= f->fsize)
		return false;
	if (!s) {
		snprintf(buf, len, "%s+0x%lx", f->base, off);
		u->unnamed++;
		return true;
	}
	if (!s->qual) {
		s->qual = demangle_qualname(s->name);
		if (!s->qual)
			s->qual = strdup(s->name);
	}
	snprintf(buf, len, "%s+0x%lx (%s)", s->qual ? s->qual : s->name, off - s->off, f->base);
	return true;
}

static bool name_ip(struct ustack *u, uint32_t pid, uint64_t ip, char *buf, size_t len);

/* Frame @fr of a stack of process @pid named into @buf; false: no code address (name_in_file) */
static bool name_frame(struct ustack *u, uint32_t pid, const struct bpf_stack_build_id *fr,
		       char *buf, size_t len)
{
	int file;

	if (fr->status == BPF_STACK_BUILD_ID_VALID) {
		file = proc_file(u, proc_of(u, pid), fr->build_id, BPF_BUILD_ID_SIZE,
				 fr->offset);
		if (file == -1)	/* a library loaded since (dlopen): the process's files again */
			file = proc_file(u, scan_proc(u, pid), fr->build_id, BPF_BUILD_ID_SIZE,
					 fr->offset);
		if (file >= 0)
			return name_in_file(u, &u->files[file], fr->offset, buf, len);
		snprintf(buf, len, "[build id %02x%02x%02x%02x...]+0x%llx%s", fr->build_id[0],
			 fr->build_id[1], fr->build_id[2], fr->build_id[3],
			 (unsigned long long)fr->offset,
			 file == -2 ? " (claimed by two files)" : "");
		u->unnamed++;
		return true;
	}
	/* an address: the kernel could not read the build id then (its page not in memory) */
	return name_ip(u, pid, fr->ip, buf, len);
}

/*
 * Address @ip of process @pid named from its mappings (read again when none holds it); false
 * when it is no code of a file: past its end, or in no file's mapping (anonymous memory: JIT
 * code, or a made-up frame; named by its address all the same).
 */
static bool name_ip(struct ustack *u, uint32_t pid, uint64_t ip, char *buf, size_t len)
{
	struct proc_maps *pm = proc_of(u, pid);

	for (int pass = 0; pass < 2; pass++) {
		if (pass)	/* mapped since we last looked */
			pm = scan_proc(u, pid);
		for (size_t i = 0; pm && i < pm->n; i++) {
			const struct pmap *m = &pm->maps[i];

			if (ip < m->start || ip >= m->end || m->file < 0)
				continue;
			return name_in_file(u, &u->files[m->file], ip - m->start + m->off, buf,
					    len);
		}
	}
	snprintf(buf, len, "0x%llx", (unsigned long long)ip);
	u->unnamed++;
	return false;
}

/* The name of return address @ip in process @pid, named once a mapping; NULL on ENOMEM. */
static const char *caller_name(struct ustack *u, uint32_t pid, uint64_t ip, uint32_t gen)
{
	char buf[USTACK_NAME_LEN], *name;
	struct named_ip *e;

	if (ohash_reserve(&u->ips, 256))
		return NULL;
	e = ohash_find(&u->ips, pid, ip);
	if (e && e->gen == gen)
		return e->name;
	/* new, or named from mappings that have changed since: named (again) */
	name_ip(u, pid, ip, buf, sizeof(buf));
	name = strdup(buf);
	if (!name)
		return NULL;
	if (!e && !(e = ohash_add(&u->ips, pid, ip))) {
		free(name);
		return NULL;
	}
	free(e->name);
	e->name = name;
	e->gen = gen;
	return name;
}

/* The frames of stack @id as named once (the kernel's walk): their count, 0 when unread. */
static int stack_names(struct ustack *u, uint32_t pid, uint32_t gen, int64_t id,
		       const char *const **names)
{
	struct bpf_stack_build_id fr[SPYRE_USTACK_FRAMES];
	struct named_stack *ns;
	char buf[USTACK_NAME_LEN];
	__u32 key = (__u32)id;
	int n;

	if (!u || id < 0 || id >= SPYRE_USTACK_MAX)
		return 0;
	ns = &u->stacks[id];
	if (ns->n && ns->pid == pid && ns->gen == gen) {
		*names = ns->v;
		return ns->n;
	}
	/* named for another process, or from mappings since changed: named again */
	for (int j = 0; j < ns->n; j++)
		free(ns->names[j]);
	free(ns->names);
	free(ns->v);
	ns->names = NULL;
	ns->v = NULL;
	ns->n = 0;
	if (bpf_map_lookup_elem(u->map_fd, &key, fr))
		return 0;
	for (n = 0; n < SPYRE_USTACK_FRAMES && fr[n].status != BPF_STACK_BUILD_ID_EMPTY; n++)
		;
	if (!n)
		return 0;
	ns->names = calloc((size_t)n, sizeof(*ns->names));
	ns->v = calloc((size_t)n, sizeof(*ns->v));
	if (!ns->names || !ns->v) {
		free(ns->names);
		free(ns->v);
		ns->names = NULL;
		ns->v = NULL;
		return 0;
	}
	for (int i = 0; i < n; i++) {
		/* past the first, the walk went astray here: what follows is no call chain */
		if (!name_frame(u, pid, &fr[i], buf, sizeof(buf)) && i) {
			u->cut++;
			n = i;
			break;
		}
		ns->names[i] = strdup(buf);
		ns->v[i] = ns->names[i] ? ns->names[i] : "?";
	}
	ns->n = n;
	ns->pid = pid;
	ns->gen = gen;
	*names = ns->v;
	return n;
}

int ustack_frames(struct ustack *u, uint32_t pid, int64_t id, uint64_t caller,
		  const char **out, bool *caller_added)
{
	struct proc_maps *pm = u ? proc_of(u, pid) : NULL;
	const char *const *v;
	const char *cn;
	uint32_t gen;
	int n, k = 0;

	if (caller_added)
		*caller_added = false;
	if (!u)
		return 0;
	/*
	 * A process's mappings read again at most every USTACK_RESCAN_MS: a library unmapped and
	 * another mapped at its address (dlclose, dlopen) changes the names taken from them
	 */
	if (!pm || mono_ns() - pm->scanned_ns >= USTACK_RESCAN_MS * 1000000ull)
		pm = scan_proc(u, pid);
	gen = pm ? pm->gen : 0;
	n = stack_names(u, pid, gen, id, &v);
	if (n <= 0)
		return 0;
#if defined(__s390x__)
	/*
	 * s390x: the kernel walks the back chain, which code built without -mbackchain (Debian's,
	 * gcc's default) does not keep: past the traced function it reads stale stack slots, and
	 * a frame from there would be named as if it were a caller. Only the function itself
	 * and its caller (r14 at entry) are known (the ustack step of the s390x guest)
	 */
	n = 1;
#endif
	out[k++] = v[0];
	/* the caller, where the kernel's walk skipped it (its frame was not set up yet) */
	cn = caller ? caller_name(u, pid, caller, gen) : NULL;
	if (cn && (n < 2 || strcmp(v[1], cn))) {
		out[k++] = cn;
		if (caller_added)
			*caller_added = true;
	}
	for (int i = 1; i < n; i++)
		out[k++] = v[i];
	return k;
}
