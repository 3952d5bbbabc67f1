// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "common/array.h"
#include "common/util.h"
#include "common/log.h"
#include "spyre.skel.h"
#include "attach/uprobe_tier.h"
#include "resolve/pyrt.h"
#include "attach/retcheck.h"
#include "attach/umulti.h"
#include "attach/feat.h"
#include "common/parallel.h"

int bpf_strip_tail_calls(struct bpf_object *obj)
{
	struct bpf_program *p;
	int n = 0;

	bpf_object__for_each_program(p, obj) {
		size_t cnt = bpf_program__insn_cnt(p);
		struct bpf_insn *insns = malloc(cnt * sizeof(*insns));
		int err;

		if (!insns)
			return -ENOMEM;
		memcpy(insns, bpf_program__insns(p), cnt * sizeof(*insns));
		for (size_t i = 0; i < cnt; i++) {
			if (insns[i].code != (BPF_JMP | BPF_CALL) || insns[i].src_reg ||
			    insns[i].imm != BPF_FUNC_tail_call)
				continue;
			insns[i] = (struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_K,
						      .dst_reg = BPF_REG_0 };
			n++;
		}
		err = bpf_program__set_insns(p, insns, cnt);
		free(insns);
		if (err)
			return err;
	}
	return n;
}

/* "0" in bpf_jit_enable: the interpreter runs BPF (a kernel without BPF_JIT_ALWAYS_ON). */
static bool bpf_jit_off(void)
{
	FILE *f = fopen("/proc/sys/net/core/bpf_jit_enable", "r");
	int v = 1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 1;
		fclose(f);
	}
	return v == 0;
}

static int load(struct tracer *tr, const struct tracer_opts *o, bool multi)
{
	struct bpf_program *progs[9];
	int err;

	tr->skel = spyre_bpf__open();
	if (!tr->skel)
		return -errno;
	progs[0] = tr->skel->progs.spyre_entry;
	progs[1] = tr->skel->progs.spyre_instant;
	progs[2] = tr->skel->progs.spyre_exit;
	progs[3] = tr->skel->progs.spyre_unwind;
	/* return sites, jump sites and tail-called functions' returns (kind_prog) */
	progs[4] = tr->skel->progs.spyre_return;
	progs[5] = tr->skel->progs.spyre_catch;
	progs[6] = tr->skel->progs.spyre_ret_site_emu;
	progs[7] = tr->skel->progs.spyre_tail_ret_emu;
	progs[8] = tr->skel->progs.spyre_entry_emu;
	/* return sites by default; the uretprobe program (and its guard) with --uretprobes */
	tr->skel->rodata->ret_sites = !o->uretprobes;
	bpf_program__set_autoload(progs[2], o->uretprobes);
	bpf_program__set_autoload(progs[3], o->uretprobes && tr->unwind_guard);
	bpf_program__set_autoload(progs[4], !o->uretprobes);
	/* the returns done by the programs: loaded where a program may write its registers */
	bpf_program__set_autoload(progs[6], !o->uretprobes && o->emulated_returns);
	bpf_program__set_autoload(progs[7], !o->uretprobes && o->emulated_returns);
	/* and the entries whose mov or lea the program does (resolve/entryinsn.h) */
	bpf_program__set_autoload(progs[8], !o->uretprobes && o->emulated_returns);
	tr->emu_loaded = !o->uretprobes && o->emulated_returns;
	if (multi)
		for (int i = 0; i < 9; i++)
			bpf_program__set_expected_attach_type(progs[i], SPYRE_TRACE_UPROBE_MULTI);
	tr->skel->rodata->sample_every = o->sample_every;
	tr->skel->rodata->filter_tgids = o->follow_pid > 0;
	/* the fork hook is only needed, and only loaded, when following */
	bpf_program__set_autoload(tr->skel->progs.spyre_fork, o->follow_pid > 0);
	if (o->rate_cap) {
		tr->skel->rodata->rate_cost_ns = 1000000000ull / o->rate_cap;
		if (!tr->skel->rodata->rate_cost_ns)
			tr->skel->rodata->rate_cost_ns = 1;
		/* a burst of one second's worth, so short spikes of a steady job pass */
		tr->skel->rodata->rate_burst_ns = 1000000000ull;
	}
	err = bpf_map__reuse_fd(tr->skel->maps.events, o->ring_fd);
	if (err)
		return err;
	tr->skel->rodata->task_storage = tr->task_storage;
	tr->skel->rodata->stage_events = tr->stage;
	/*
	 * Open calls kept per stack (coroutines, sigaltstack): the stack a pointer is on is its
	 * mapping, bpf_find_vma (5.17+), looked up only where a thread's open calls could be
	 * over (an exception, a longjmp, a stack switch). SPYRE_NO_STACK_REGIONS=1: one stack.
	 */
	tr->stack_regions = !env_is_1("SPYRE_NO_STACK_REGIONS") && feat_find_vma();
	tr->skel->rodata->stack_regions = tr->stack_regions;
	/* the thread-exit hook flushes stages, counts cancelled calls, reports the exit code */
	bpf_program__set_autoload(tr->skel->progs.spyre_task_exit, tr->exit_hook);
	bpf_program__set_autoload(tr->skel->progs.spyre_task_iter, tr->task_storage);
	/* the hash fallback is not used then: keep its kernel memory free */
	if (tr->task_storage)
		bpf_map__set_max_entries(tr->skel->maps.stacks, 1);
	/* 8 MiB of kernel memory from creation on: only when some probe takes native stacks */
	if (!o->ustack_map)
		bpf_map__set_max_entries(tr->skel->maps.ustacks, 1);
	if (getenv("SPYRE_TEST_NO_STACK_EVERY"))	/* fault injection (bpf/spyre.bpf.c) */
		tr->skel->rodata->test_nostack_every = atoi(getenv("SPYRE_TEST_NO_STACK_EVERY"));
	err = bpf_map__set_max_entries(tr->skel->maps.counters, tr->room);
	err = err ?: bpf_map__set_max_entries(tr->skel->maps.probe_reads, tr->room);
	err = err ?: bpf_map__set_max_entries(tr->skel->maps.entry_insns, tr->room);
	if (err)
		return err;
	if (bpf_jit_off()) {
		int n = bpf_strip_tail_calls(tr->skel->obj);

		if (n < 0)
			return n;
		pr_debug("BPF JIT off: %d never-taken tail calls made r0 = 0 for the interpreter\n",
			 n);
	}
	return spyre_bpf__load(tr->skel);
}

/*
 * Task storage for uprobe (kprobe-type) programs: the helper and bpf_get_current_task_btf()
 * must both be offered to BPF_PROG_TYPE_KPROBE. Each probe loads a two-instruction program
 * (~0.2 ms); a kernel without them keeps the per-thread stacks in a hash map.
 */
static bool kernel_has_task_storage(void)
{
	if (env_is_1("SPYRE_NO_TASK_STORAGE"))
		return false;
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_task_storage_get, NULL) > 0 &&
	       libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_current_task_btf,
				       NULL) > 0;
}

/*
 * The unwind guard (spyre_unwind) writes return addresses back into the traced thread's stack:
 * bpf_probe_write_user, which a kernel under lockdown refuses. Only on x86-64, where a call's
 * return address sits in a known stack slot; elsewhere it arrives in a link register that the
 * function saves where its own code decides, out of the guard's reach.
 */
static bool kernel_allows_unwind_guard(void)
{
#if defined(__x86_64__)
	return !env_is_1("SPYRE_NO_UNWIND_GUARD") && feat_write_user();
#else
	return false;
#endif
}

int tracer_ring_create(unsigned int ringbuf_mb)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "events", 0, 0, ringbuf_mb << 20, NULL);

	return fd < 0 ? -errno : fd;
}

/* Load with uprobe_multi links where the kernel has them, else with perf-event links. */
static int load_links(struct tracer *tr, const struct tracer_opts *o)
{
	int err = -EINVAL;

	tr->multi = false;
	if (umulti_supported()) {
		/* a kernel without uprobe_multi rejects the attach type: not worth a warning */
		libbpf_quiet(true);
		err = load(tr, o, true);
		libbpf_quiet(false);
		tr->multi = !err;
		if (!err)
			return 0;
	}
	spyre_bpf__destroy(tr->skel);
	tr->skel = NULL;
	libbpf_quiet(tr->exit_hook);	/* the retry without the hook says why, once */
	err = load(tr, o, false);
	libbpf_quiet(false);
	if (err) {
		spyre_bpf__destroy(tr->skel);
		tr->skel = NULL;
	}
	return err;
}

/*
 * The counters are per CPU, 80 bytes a probe on every CPU, made when the object loads: 65536
 * of them took 81 ms (and 8 MiB) on this 2-CPU machine, 1024 took 2 ms; a 192-CPU server would
 * pay 96 times the memory. So a run gets room for what its table resolved, twice over for the
 * libraries it loads later (dlopen), not a ceiling's worth.
 */
int tracer_room(int resolved, int max_probes)
{
	if (max_probes > 0)
		return max_probes;
	if (resolved > SPYRE_MAX_PROBES / 2)
		return SPYRE_MAX_PROBES;
	return 2 * resolved > SPYRE_PROBE_ROOM ? 2 * resolved : SPYRE_PROBE_ROOM;
}

int tracer_open(struct tracer *tr, const struct tracer_opts *o)
{
	int err = -EINVAL;

	memset(tr, 0, sizeof(*tr));
	tr->room = o->room > 0 ? o->room : SPYRE_PROBE_ROOM;
	tr->python = o->python;
	tr->ustack = o->ustack;
	tr->counters = calloc(tr->room, sizeof(*tr->counters));
	if (!tr->counters) {
		err = -ENOMEM;
		goto fail;
	}
	tr->task_storage = kernel_has_task_storage();
	tr->stage = tr->task_storage && !env_is_1("SPYRE_NO_STAGE");
	tr->unwind_guard = o->uretprobes && kernel_allows_unwind_guard();
	tr->exit_hook = true;
	err = load_links(tr, o);
	if (err) {
		/*
		 * Without the thread-exit hook (a kernel that refuses tp_btf): no staging (its
		 * stages would die with their threads), no exit codes, no cancelled-call count.
		 */
		tr->exit_hook = tr->stage = false;
		err = load_links(tr, o);
		if (err)
			goto fail;
		pr_warn("no thread-exit hook (tp_btf/sched_process_exit refused): a traced "
			"process's crash is not told from an exit");
	}
	if (tr->exit_hook &&
	    !(tr->exit_link = bpf_program__attach(tr->skel->progs.spyre_task_exit))) {
		err = -errno;
		goto fail;
	}
	if (o->follow_pid > 0) {
		__u32 key = o->follow_pid;
		__u8 one = 1;

		err = bpf_map_update_elem(bpf_map__fd(tr->skel->maps.tgids), &key, &one, BPF_ANY);
		if (!err && !(tr->fork_link = bpf_program__attach(tr->skel->progs.spyre_fork)))
			err = -errno;
		if (err)
			goto fail;
	}
	return 0;
fail:
	tracer_close(tr);
	return err;
}

/*
 * One uprobe_multi link: @n offsets of one library, all served by @prog; @uret: return
 * probes; @first: closed in detach's first pass (whatever sees returns).
 */
static int multi_link(struct tracer *tr, struct bpf_program *prog, const char *path,
		      unsigned long *offs, __u64 *cookies, int n, bool uret, bool first, int pid)
{
	size_t need = (size_t)tr->nmlinks + 1, cap = tr->capmlinks, cap2 = cap;
	int fd;

	/* parallel arrays: both grow to the same capacity */
	if (array_reserve(&tr->mlinks, &cap, need, sizeof(*tr->mlinks), 16) ||
	    array_reserve(&tr->mlink_ret, &cap2, need, sizeof(*tr->mlink_ret), 16))
		return -ENOMEM;
	tr->capmlinks = cap;
	fd = umulti_link(bpf_program__fd(prog), path, offs, cookies, n, uret, pid);
	if (fd < 0)
		return fd;
	tr->mlink_ret[tr->nmlinks] = first;
	tr->mlinks[tr->nmlinks++] = fd;
	return 0;
}

/*
 * What the links of a probe are. The order of enum is the order of attaching: the unwind
 * guard first, so that no uretprobe is live without it; returns before entries, so that a call
 * entered before its entry probe is live returns unmatched (counted, dropped) instead of
 * leaving a frame that never closes.
 */
enum link_kind {
	LK_UNWIND, LK_CATCH, LK_URET, LK_RET_SITE, LK_JUMP_SITE, LK_ENTRY, LK_INSTANT, LK_NR
};

static struct bpf_program *kind_prog(struct tracer *tr, enum link_kind k)
{
	switch (k) {
	case LK_UNWIND:
		return tr->skel->progs.spyre_unwind;
	case LK_CATCH:
		return tr->skel->progs.spyre_catch;
	case LK_URET:
		return tr->skel->progs.spyre_exit;
	case LK_RET_SITE:
		return tr->emulate ? tr->skel->progs.spyre_ret_site_emu :
		       tr->skel->progs.spyre_return;
	case LK_JUMP_SITE:
		return tr->skel->progs.spyre_return;
	case LK_ENTRY:
		return tr->emulate ? tr->skel->progs.spyre_entry_emu : tr->skel->progs.spyre_entry;
	default:
		return tr->skel->progs.spyre_instant;
	}
}

/*
 * SPYRE_CK_* for the entry or instant link of a probe: SPYRE_CK_MEM* for mem= (memledger.h),
 * SPYRE_CK_READ when it reads user memory (dereferences, str=), SPYRE_CK_NOW for the device
 * timeline's launches and evidence.
 */
static __u32 probe_mem_cookie(const struct probe_spec *s, enum probe_type type, int ret)
{
	__u32 read = s->nderef || s->str ? SPYRE_CK_READ : 0;

	if (s->dev == DEV_LAUNCH || s->dev == DEV_SYNC || s->dev == DEV_QUERY)
		read |= SPYRE_CK_NOW;
	if (s->mem == MEM_NONE)
		return read;
	if (s->mem == MEM_FREE && type == PROBE_SPAN && ret != RET_NONE)
		return SPYRE_CK_MEM | SPYRE_CK_MEM_ENTRY | read;
	return SPYRE_CK_MEM | read;
}

/* What probe @s reads from user memory, for the BPF programs (struct spyre_read_cfg). */
void probe_read_cfg(const struct probe_spec *s, struct spyre_read_cfg *r)
{
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < s->nderef && i < SPYRE_MAX_DEREFS; i++) {
		r->src[i] = s->deref[i].src == PROBE_VAL_SRET ? SPYRE_DEREF_SRET :
			    s->deref[i].src == PROBE_VAL_RET ? SPYRE_DEREF_RET : s->deref[i].src;
		r->off[i] = s->deref[i].off;
	}
	if (s->str) {
		r->str_arg = s->str_arg;
		r->str_kind = s->str == STR_C ? SPYRE_STR_C : SPYRE_STR_CXX;
	}
}

/* The read configurations of @t's probes not attached yet, before their links exist. */
static int write_read_cfgs(struct tracer *tr, const struct target *t)
{
	int fd = bpf_map__fd(tr->skel->maps.probe_reads);

	for (int i = 0; i < t->cnt; i++) {
		const struct probe_spec *s = &t->table->specs[t->probes[i].spec];
		struct spyre_read_cfg r;
		__u32 key = i;

		if (t->probes[i].attached || (!s->nderef && !s->str))
			continue;
		probe_read_cfg(s, &r);
		if (bpf_map_update_elem(fd, &key, &r, BPF_ANY))
			return -errno;
	}
	return 0;
}

_Static_assert(ENTRY_INSN_RIP == SPYRE_EI_RIP && ENTRY_INSN_NONE == SPYRE_EI_NONE,
	       "entry_insn and spyre_entry_insn name registers alike");

/* Does the entry program do probe @p's entry instruction (SPYRE_CK_ENTRY_INSN)? */
static bool entry_insn_done(const struct tracer *tr, const struct rprobe *p)
{
	return tr->emulate && p->entry.len;
}

/* The entry instructions the programs do for @t's probes not attached yet (entryinsn.h). */
static int write_entry_insns(struct tracer *tr, const struct target *t)
{
	int fd = bpf_map__fd(tr->skel->maps.entry_insns);

	for (int i = 0; i < t->cnt; i++) {
		const struct entry_insn *e = &t->probes[i].entry;
		struct spyre_entry_insn w = { .len = e->len, .dst = e->dst, .base = e->base,
					      .index = e->index, .scale = e->scale, .w32 = e->w32,
					      .disp = e->disp };
		__u32 key = i;

		if (t->probes[i].attached || !entry_insn_done(tr, &t->probes[i]))
			continue;
		if (bpf_map_update_elem(fd, &key, &w, BPF_ANY))
			return -errno;
	}
	return 0;
}

/*
 * The offsets (and cookies) probe @i of @t needs for links of kind @k, written to @offs and
 * @cookies; returns how many. A jump site's cookie carries its condition (retsite.h) above the
 * probe index. Without the unwind guard (lockdown), type=unwind probes stay unattached.
 */
static int kind_offsets(const struct tracer *tr, const struct target *t, int i,
			enum link_kind k, unsigned long *offs, __u64 *cookies)
{
	const struct rprobe *p = &t->probes[i];
	const struct probe_spec *sp = &t->table->specs[p->spec];
	enum probe_type type = sp->type;
	int n = 0;

	if (p->failed)
		return 0;
	switch (k) {
	case LK_UNWIND:
		if (type != PROBE_UNWIND || !tr->unwind_guard)
			return 0;
		break;
	case LK_CATCH:
		if (type != PROBE_CATCH)
			return 0;
		break;
	case LK_URET:
		if (type != PROBE_SPAN || p->ret != RET_URETPROBE)
			return 0;
		break;
	case LK_RET_SITE:
	case LK_JUMP_SITE:
		if (type != PROBE_SPAN || p->ret != RET_SITES)
			return 0;
		for (int j = 0; j < p->sites.n; j++) {
			const struct ret_site *r = &p->sites.v[j];

			if (r->jump != (k == LK_JUMP_SITE))
				continue;
			offs[n] = p->sym_off + r->off;
			cookies[n++] = spyre_cookie(i, r->cond | (r->followed ? SPYRE_CK_TAIL_FOLLOW : 0) |
							  (r->nests ? SPYRE_CK_TAIL_NEST : 0) |
							  (r->jump ? SPYRE_CK_SITE_JUMP : 0) |
							  (uint32_t)r->pop << SPYRE_CK_POP_SHIFT);
		}
		return n;
	case LK_ENTRY:
		if (type != PROBE_SPAN || p->ret == RET_NONE)
			return 0;
		break;
	default:
		if (type != PROBE_INSTANT && (type != PROBE_SPAN || p->ret != RET_NONE))
			return 0;
		break;
	}
	offs[0] = p->attach_off;
	cookies[0] = spyre_cookie(i, probe_mem_cookie(sp, type, p->ret) |
				     (k == LK_ENTRY && entry_insn_done(tr, p) ?
				      SPYRE_CK_ENTRY_INSN : 0) |
				     (k == LK_ENTRY && (tr->python || sp->py) ? SPYRE_CK_PY : 0) |
				     (k == LK_ENTRY && (tr->ustack || sp->stack) ?
				      SPYRE_CK_USTACK : 0));
	return 1;
}

/* Offsets one probe can need at most (see kind_offsets). */
static int max_offsets(const struct target *t)
{
	int m = 1;

	for (int i = 0; i < t->cnt; i++)
		if (t->probes[i].sites.n > m)
			m = t->probes[i].sites.n;
	return m;
}

/*
 * The kernel refused probe @i's links of kind @k (an instruction it cannot probe, e.g. one with
 * a lock prefix): the other probes go on. A return site refused: the probe records entries
 * only. Anything else: the probe is not traced. Said once per probe.
 */
static void probe_refused(struct target *t, int i, enum link_kind k, int err)
{
	struct rprobe *p = &t->probes[i];

	if (k == LK_RET_SITE || k == LK_JUMP_SITE) {
		pr_warn("%s: the kernel refuses a uprobe on one of its return sites (%s): entries "
			"only", p->qualname, strerror(-err));
		p->ret = RET_NONE;
		p->sites.why = "the kernel refused a uprobe on a return site";
		t->entry_only++;
		return;
	}
	/* 524: the kernel's ENOTSUPP, which has no name in userspace */
	pr_warn("cannot attach to %s (%s+0x%lx): %s; not traced", p->qualname,
		t->libs[p->lib].path, p->attach_off, err == -524 ?
		"the kernel cannot put a uprobe on that instruction (ENOTSUPP)" : strerror(-err));
	p->failed = true;
}

/* Errors that no other probe would escape: stop attaching. */
static bool fatal_attach_error(int err)
{
	return err == -EPERM || err == -EACCES || err == -ENOMEM;
}

/* After attaching: every probe that has its links now (not the refused ones) is attached. */
static void mark_attached(struct tracer *tr, struct target *t)
{
	for (int i = 0; i < t->cnt; i++) {
		struct rprobe *p = &t->probes[i];

		if (!p->attached && !p->failed &&
		    (t->table->specs[p->spec].type != PROBE_UNWIND || tr->unwind_guard)) {
			p->attached = true;
			tr->attached++;
		}
	}
}

/* Attach the unattached probes of each library with one link per kind. */
static int attach_multi(struct tracer *tr, struct target *t, int pid)
{
	int cap = 0, err = 0;
	unsigned long *offs;
	__u64 *cookies;

	for (int i = 0; i < t->cnt; i++)
		cap += t->probes[i].sites.n + 1;
	offs = calloc(cap ? cap : 1, sizeof(*offs));
	cookies = calloc(cap ? cap : 1, sizeof(*cookies));
	if (!offs || !cookies) {
		err = -ENOMEM;
		goto out;
	}
	for (int k = 0; k < LK_NR && !err; k++) {
		struct bpf_program *prog = kind_prog(tr, k);
		bool site = k == LK_RET_SITE || k == LK_JUMP_SITE;

		for (int lib = 0; lib < t->nlibs && !err; lib++) {
			const char *path = t->libs[lib].open_path;
			int n = 0;

			for (int i = 0; i < t->cnt; i++)
				if (t->probes[i].lib == lib && !t->probes[i].attached)
					n += kind_offsets(tr, t, i, k, offs + n, cookies + n);
			if (!n)
				continue;
			err = multi_link(tr, prog, path, offs, cookies, n, k == LK_URET,
					 k == LK_URET || site, pid);
			if (err && !fatal_attach_error(err)) {
				/* one link per probe, to find the one the kernel refuses */
				err = 0;
				for (int i = 0; i < t->cnt && !err; i++) {
					int m, e;

					if (t->probes[i].lib != lib || t->probes[i].attached)
						continue;
					m = kind_offsets(tr, t, i, k, offs, cookies);
					if (!m)
						continue;
					e = multi_link(tr, prog, path, offs, cookies, m, k == LK_URET,
						       k == LK_URET || site, pid);
					if (fatal_attach_error(e))
						err = e;
					else if (e)
						probe_refused(t, i, k, e);
				}
			}
			if (err)
				pr_err("cannot attach %d probes to %s: %s", n, t->libs[lib].path,
				       strerror(-err));
		}
	}
	if (!err)
		mark_attached(tr, t);
out:
	free(offs);
	free(cookies);
	return err;
}

int tracer_ring_fd(const struct tracer *tr)
{
	return tr->skel ? bpf_map__fd(tr->skel->maps.events) : -EBADF;
}

int tracer_ustack_fd(const struct tracer *tr)
{
	return tr->skel ? bpf_map__fd(tr->skel->maps.ustacks) : -EBADF;
}

/*
 * With --uretprobes and without the guard, a C++ exception thrown through a traced call
 * terminates the process: say so once, when the target has an unwinder the guard would have
 * been put on.
 */
static void warn_unguarded(struct tracer *tr, const struct target *t)
{
	for (int i = 0; i < t->cnt && !tr->unwind_warned; i++) {
		if (t->table->specs[t->probes[i].spec].type != PROBE_UNWIND)
			continue;
		pr_warn("--uretprobes without the unwind guard (the kernel refuses "
			"bpf_probe_write_user, or not x86-64): a C++ exception thrown through a "
			"traced call would terminate the process (%s is mapped; see \"C++ "
			"exceptions\" in docs/user-guide.md)", t->libs[t->probes[i].lib].path);
		tr->unwind_warned = true;
	}
}

/* A perf-event link kept in tr->site_links (return sites: any number per probe). */
static int keep_site_link(struct tracer *tr, struct bpf_link *l)
{
	size_t need = (size_t)tr->nsite_links + 1, cap = tr->cap_site_links;

	if (array_reserve(&tr->site_links, &cap, need, sizeof(*tr->site_links), 64))
		return -ENOMEM;
	tr->cap_site_links = cap;
	tr->site_links[tr->nsite_links++] = l;
	return 0;
}

/* Room in tr->entry_links and tr->ret_links for the @n probes of the target. */
static int grow_links(struct tracer *tr, int n)
{
	size_t cap = (size_t)tr->nlinks, cap2 = cap;

	/* parallel arrays: both grow to the same capacity, new slots empty */
	if (n <= 0 || (size_t)n <= cap)
		return 0;
	if (array_reserve(&tr->entry_links, &cap, (size_t)n, sizeof(*tr->entry_links), 64) ||
	    array_reserve(&tr->ret_links, &cap2, (size_t)n, sizeof(*tr->ret_links), 64))
		return -ENOMEM;
	memset(tr->entry_links + tr->nlinks, 0, (cap - tr->nlinks) * sizeof(*tr->entry_links));
	memset(tr->ret_links + tr->nlinks, 0, (cap - tr->nlinks) * sizeof(*tr->ret_links));
	tr->nlinks = (int)cap;
	return 0;
}

/*
 * Each perf-event uprobe holds a file descriptor: up to SPYRE_PERF_MAX_UPROBES of them, more
 * than the soft limit many services start with (1024), so it goes up to the hard limit.
 */
static void want_fds(int n)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) || r.rlim_cur == RLIM_INFINITY ||
	    r.rlim_cur >= (rlim_t)n + 256 || r.rlim_cur >= r.rlim_max)
		return;
	r.rlim_cur = r.rlim_max;
	setrlimit(RLIMIT_NOFILE, &r);
}

/* Perf-event links (no uprobe_multi): one per offset, kinds in the same order. */
static int attach_perf(struct tracer *tr, struct target *t, int pid)
{
	int cap = max_offsets(t), need = 0, err;
	unsigned long offs[cap];
	__u64 cookies[cap];

	for (int k = 0; k < LK_NR; k++)
		for (int i = 0; i < t->cnt; i++)
			if (!t->probes[i].attached)
				need += kind_offsets(tr, t, i, k, offs, cookies);
	if (tr->perf_uprobes + need > SPYRE_PERF_MAX_UPROBES) {
		/* once: a rescan that finds more (dlopen) would say it again */
		if (!tr->perf_limit_said)
			pr_err("this kernel has no uprobe_multi links (Linux 6.6+): one perf event "
			       "per uprobe, at most %d in a run; %d more are needed (entries and "
			       "return sites of %d functions, %d attached), none of them attached: "
			       "narrow the probe globs (`spyre-bpftrace list -p PID` shows what "
			       "they match)", SPYRE_PERF_MAX_UPROBES, need, t->cnt,
			       tr->perf_uprobes);
		tr->perf_limit_said = true;
		return -E2BIG;
	}
	err = grow_links(tr, t->cnt);
	if (err)
		return err;
	want_fds(tr->perf_uprobes + need);
	for (int k = 0; k < LK_NR; k++) {
		for (int i = 0; i < t->cnt; i++) {
			struct rprobe *p = &t->probes[i];
			const char *path = t->libs[p->lib].open_path;
			int n, first = tr->nsite_links, err = 0;

			if (p->attached)
				continue;
			n = kind_offsets(tr, t, i, k, offs, cookies);
			for (int j = 0; j < n && !err; j++) {
				LIBBPF_OPTS(bpf_uprobe_opts, opts, .bpf_cookie = cookies[j],
					    .retprobe = k == LK_URET);
				struct bpf_link *l = bpf_program__attach_uprobe_opts(
					kind_prog(tr, k), pid, path, offs[j], &opts);

				if (!l)
					err = -errno;
				else if (k == LK_RET_SITE || k == LK_JUMP_SITE)
					err = keep_site_link(tr, l);
				else
					(k == LK_URET ? tr->ret_links : tr->entry_links)[i] = l;
				tr->perf_uprobes += !!l;
			}
			if (err && fatal_attach_error(err)) {
				pr_err("cannot attach to %s (%s+0x%lx): %s", p->qualname,
				       t->libs[p->lib].path, p->attach_off, strerror(-err));
				return err;
			}
			if (err && (k == LK_RET_SITE || k == LK_JUMP_SITE)) {
				/* its sites so far go too: a probe has all of them or none */
				destroy_links_parallel(tr->site_links + first,
						       tr->nsite_links - first);
				tr->perf_uprobes -= tr->nsite_links - first;
				tr->nsite_links = first;
			}
			if (err)
				probe_refused(t, i, k, err);
		}
	}
	mark_attached(tr, t);
	return 0;
}

/*
 * The kernel refused a return site of a tail-called function: no tail jump is followed any
 * more (a call marked at its jump would then never close); those attached from now on end at
 * their jump, as without following. Said once.
 */
static void tails_refused(struct target *t, int err)
{
	pr_warn("the kernel refuses a uprobe on a return site of a tail-called function (%s): "
		"traced calls that tail-jump end at their jump", strerror(-err));
	for (int i = 0; i < t->cnt; i++) {
		struct rprobe *p = &t->probes[i];

		for (int k = 0; k < p->sites.n; k++) {
			if (!p->sites.v[k].followed || p->attached)
				continue;
			p->sites.v[k].followed = p->sites.v[k].nests = false;
			p->tail_followed--;
			p->tail_lost++;
			p->tail_why = "the kernel refused a uprobe on a tail-called function's return";
		}
	}
}

/*
 * The return sites of tail-called functions (target_follow_tails), before the jump sites
 * that rely on them: one uprobe_multi link per library, or a perf event per site. Shared by
 * the probes whose chains end there: detached with everything (tracer_detach).
 */
static int attach_tails(struct tracer *tr, struct target *t, int pid)
{
	struct bpf_program *prog = tr->emulate ? tr->skel->progs.spyre_tail_ret_emu :
				   tr->skel->progs.spyre_return;
	unsigned long *offs = calloc(t->ntails ? t->ntails : 1, sizeof(*offs));
	__u64 *cookies = calloc(t->ntails ? t->ntails : 1, sizeof(*cookies));
	int err = 0;

	if (!offs || !cookies) {
		err = -ENOMEM;
		goto out;
	}
	for (int lib = 0; lib < t->nlibs && !err; lib++) {
		const char *path = t->libs[lib].open_path;
		int n = 0;

		for (int k = 0; k < t->ntails; k++) {
			if (t->tails[k].lib != lib || t->tails[k].attached)
				continue;
			cookies[n] = spyre_cookie(0, SPYRE_CK_SITE_TAIL |
						     (uint32_t)t->tails[k].pop << SPYRE_CK_POP_SHIFT);
			offs[n++] = t->tails[k].off;
		}
		if (!n)
			continue;
		if (tr->multi) {
			err = multi_link(tr, prog, path, offs, cookies, n, false, true, pid);
		} else {
			for (int k = 0; k < n && !err; k++) {
				LIBBPF_OPTS(bpf_uprobe_opts, uo, .bpf_cookie = cookies[k]);
				struct bpf_link *l = bpf_program__attach_uprobe_opts(prog, pid, path,
										     offs[k], &uo);

				err = l ? keep_site_link(tr, l) : -errno;
				tr->perf_uprobes += !!l;
			}
		}
		if (fatal_attach_error(err))
			break;
		if (err) {
			tails_refused(t, err);
			err = 0;
			continue;
		}
		for (int k = 0; k < t->ntails; k++)
			if (t->tails[k].lib == lib)
				t->tails[k].attached = true;
	}
out:
	free(offs);
	free(cookies);
	return err;
}

int tracer_attach(struct tracer *tr, struct target *t, int pid)
{
	int err;

	if (t->cnt > tr->room)	/* callers keep t->max_probes at tr->room */
		return -E2BIG;
	err = write_read_cfgs(tr, t);
	if (err) {
		pr_err("cannot configure the probes' memory reads: %s", strerror(-err));
		return err;
	}
	err = write_entry_insns(tr, t);
	if (err) {
		pr_err("cannot configure the entries done by BPF: %s", strerror(-err));
		return err;
	}
	tr->skel->data->tracing_on = 1;
	if (t->uretprobes && !tr->unwind_guard)
		warn_unguarded(tr, t);
	err = attach_tails(tr, t, pid);
	if (err)
		return err;
	return tr->multi ? attach_multi(tr, t, pid) : attach_perf(tr, t, pid);
}

/*
 * Run spyre_task_iter over every task, only while no probe is attached: the stages' last spans
 * and every open call go to the ring. Loaded only with task storage: with the hash fallback (a
 * debugging switch, SPYRE_NO_TASK_STORAGE=1), calls open at the stop stay counted as noReturn
 * without their instants. Failing here loses at most SPYRE_STAGE - 1 spans per thread and the
 * open calls' instants, which the counters then show as hits without events, or (@forget)
 * leaves stale frames: say so.
 */
static void run_task_iter(struct tracer *tr)
{
	struct bpf_program *prog = tr->skel->progs.spyre_task_iter;
	struct bpf_link *link;
	char buf[64];
	int fd;
	ssize_t n;

	if (!tr->task_storage || bpf_program__fd(prog) < 0)
		return;	/* not loaded */
	link = bpf_program__attach_iter(prog, NULL);
	fd = link ? bpf_iter_create(bpf_link__fd(link)) : -errno;
	tr->skel->bss->forget_stacks = 1;
	if (fd >= 0) {
		while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
			;
		if (n < 0)
			fd = -errno;
		else
			close(fd);
	}
	tr->skel->bss->forget_stacks = 0;
	bpf_link__destroy(link);
	if (fd < 0)
		pr_err("cannot collect the last spans of live threads: %s", strerror(-fd));
}

void tracer_detach(struct tracer *tr, struct target *t)
{
	/* stop recording new calls now; unlinking takes a while (see tracing_on in the BPF) */
	if (tr->skel)
		tr->skel->data->tracing_on = 0;

	/*
	 * Return probes go first: a call entered after its return probe is gone leaves a frame
	 * that is simply never closed, while the reverse order would report returns without
	 * entries.
	 */
	/* multi links in the same order: returns first, each pass's waits side by side */
	for (int pass = 0; pass < 2; pass++) {
		int fds[tr->nmlinks > 0 ? tr->nmlinks : 1], n = 0;

		for (int i = 0; i < tr->nmlinks; i++) {
			if (tr->mlinks[i] >= 0 && tr->mlink_ret[i] == (pass == 0)) {
				fds[n++] = tr->mlinks[i];
				tr->mlinks[i] = -1;
			}
		}
		close_parallel(fds, n);
	}
	tr->nmlinks = 0;
	/*
	 * Perf-event uprobe links (no uprobe_multi): closing one waits for grace periods (~0.3 s
	 * each here); one after the other, 30 links took 9 s. Side by side the kernel still
	 * removes them one at a time, ~47 ms each on 6.18 here (952 took 45 s): hence
	 * SPYRE_PERF_MAX_UPROBES.
	 */
	destroy_links_parallel(tr->ret_links, tr->nlinks);
	destroy_links_parallel(tr->site_links, tr->nsite_links);
	tr->nsite_links = 0;
	destroy_links_parallel(tr->entry_links, tr->nlinks);
	tr->perf_uprobes = 0;
	for (int i = 0; t && i < t->cnt; i++)
		t->probes[i].attached = false;
	for (int i = 0; t && i < t->ntails; i++)
		t->tails[i].attached = false;
	tr->attached = 0;
	/*
	 * No probe can run any more: what threads still hold (staged spans, open calls) goes to
	 * the ring, and their frames are forgotten in the same walk (each thread announced again
	 * if probes come back: a budget's next window, a fleet window's file). One walk: a budget
	 * pause walked every task twice before, once to report, once to forget.
	 */
	if (!tr->skel)
		return;
	if (tr->task_storage) {
		run_task_iter(tr);
	} else {
		int fd = bpf_map__fd(tr->skel->maps.stacks);
		__u32 next;

		/* delete while iterating: always ask for the first key again */
		while (!bpf_map_get_next_key(fd, NULL, &next))
			if (bpf_map_delete_elem(fd, &next))
				break;
	}
}

void tracer_read_counters(struct tracer *tr, int n)
{
	int ncpu = libbpf_num_possible_cpus();
	struct spyre_counters *v;

	memset(tr->counters, 0, tr->room * sizeof(*tr->counters));
	if (ncpu <= 0 || !(v = calloc(ncpu, sizeof(*v))))
		return;
	for (int i = 0; i < n && i < tr->room; i++) {
		__u32 key = i;

		if (bpf_map_lookup_elem(bpf_map__fd(tr->skel->maps.counters), &key, v))
			continue;
		for (int c = 0; c < ncpu; c++) {
			tr->counters[i].hits += v[c].hits;
			tr->counters[i].drops_ring += v[c].drops_ring;
			tr->counters[i].drops_depth += v[c].drops_depth;
			tr->counters[i].drops_nostack += v[c].drops_nostack;
			tr->counters[i].unmatched += v[c].unmatched;
			tr->counters[i].sampled_out += v[c].sampled_out;
			tr->counters[i].drops_rate += v[c].drops_rate;
			tr->counters[i].unwound += v[c].unwound;
			tr->counters[i].tail_exits += v[c].tail_exits;
			tr->counters[i].deref_faults += v[c].deref_faults;
			tr->counters[i].py_none += v[c].py_none;
			tr->counters[i].py_trunc += v[c].py_trunc;
			tr->counters[i].ustack_lost += v[c].ustack_lost;
		}
	}
	free(v);
}

void tracer_reset_counters(struct tracer *tr, int n)
{
	int ncpu = libbpf_num_possible_cpus();
	struct spyre_counters *v;

	if (ncpu <= 0 || !(v = calloc(ncpu, sizeof(*v))))
		return;
	for (int i = 0; i < n && i < tr->room; i++) {
		__u32 key = i;

		bpf_map_update_elem(bpf_map__fd(tr->skel->maps.counters), &key, v, BPF_ANY);
	}
	free(v);
}

void tracer_close(struct tracer *tr)
{
	if (tr->counters)	/* opened */
		tracer_detach(tr, NULL);
	bpf_link__destroy(tr->fork_link);
	bpf_link__destroy(tr->exit_link);
	spyre_bpf__destroy(tr->skel);
	free(tr->mlinks);
	free(tr->mlink_ret);
	free(tr->site_links);
	free(tr->entry_links);
	free(tr->ret_links);
	free(tr->counters);
	memset(tr, 0, sizeof(*tr));
}

int tracer_emu_progs_known(void)
{
	struct spyre_bpf *skel = spyre_bpf__open();
	int err = skel ? 0 : -errno;

	for (int i = 0; !err && i < RETCHECK_EMU_PROGS; i++)
		if (!bpf_object__find_program_by_name(skel->obj, retcheck_emu_progs[i]))
			err = -ENOENT;
	spyre_bpf__destroy(skel);
	return err;
}

int tracer_emu_prog_ids(const struct tracer *tr, unsigned int *ids, int max)
{
	int n = 0;

	for (int i = 0; i < RETCHECK_EMU_PROGS && n < max; i++) {
		struct bpf_program *p = bpf_object__find_program_by_name(tr->skel->obj,
									 retcheck_emu_progs[i]);
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = p ? bpf_program__fd(p) : -1;

		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			ids[n++] = info.id;
	}
	return n;
}

int tracer_py_proc(struct tracer *tr, const struct py_proc *pp)
{
	const struct py_offsets *o = pp->off;
	struct spyre_py_proc v = {
		.interp_head = pp->runtime + o->rt_interp_head, .interp_threads = o->interp_threads,
		.ts_next = o->ts_next, .ts_native_tid = o->ts_native_tid, .ts_cframe = o->ts_cframe,
		.cframe_frame = o->no_cframe ? SPYRE_PY_NO_CFRAME : o->cframe_frame,
		.f_code = o->f_code, .f_previous = o->f_previous, .f_prev_instr = o->f_prev_instr,
		.code_bytecode = o->co_code_adaptive, .f_owner = o->f_owner,
	};
	__u32 key = pp->pid;

	if (bpf_map_update_elem(bpf_map__fd(tr->skel->maps.py_procs), &key, &v, BPF_ANY))
		return -errno;
	return 0;
}
