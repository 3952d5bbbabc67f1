/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The start-up self-test of return sites. A return site is a uprobe on a return instruction,
 * which the kernel steps out of line and then sends to the branch's target. Under an emulator
 * that loses that target (QEMU's TCG before 9.1 on s390x: a PER event discarded the branch
 * result, and the kernel then took the branch for not taken) a traced job goes on at the
 * instruction after its return and crashes. So before any return site goes on a job, one goes
 * on the return instruction of a small function of our own, which a child process of ours then
 * calls: the call must come back to its caller with the value of the code before the return,
 * not with that of the code after it. Where it does not, every probe records entries only.
 *
 * Run where return sites are single-stepped branches that emulators may get wrong: s390x and
 * ppc64le. On x86-64 only with SPYRE_RETSITE_SELFTEST=1 (its cost calibration steps a probed
 * ret in this process at every start already); SPYRE_RETSITE_SELFTEST=0 skips it anywhere.
 * SPYRE_TEST_RETSITE_FALLTHROUGH=1 (tests): the child calls the instruction after the return,
 * as the broken emulator makes the probed call go on, so the fallback can be tested anywhere.
 */
#ifndef SPYRE_RETCHECK_H
#define SPYRE_RETCHECK_H

#include <stdbool.h>

enum retcheck_verdict {
	RETCHECK_NOT_RUN = 0,	/* not here, not asked for, or it could not be set up */
	RETCHECK_PASSED,	/* the probed return was hit and came back right */
	RETCHECK_UNSURE,	/* came back right, but the probe was never hit */
	RETCHECK_FAILED,	/* return sites cannot be used here */
};

struct retcheck;

/*
 * What the test's probe does: count its hits while the kernel single-steps the return
 * (RETCHECK_STEPPED, the return sites of every architecture), or also perform the return
 * itself, ip and sp set by the program (RETCHECK_EMULATED, x86-64: the tracer's return sites
 * then return by themselves, with no single step, where the test passes).
 */
enum retcheck_mode { RETCHECK_STEPPED, RETCHECK_EMULATED };

/*
 * Does a uprobe program that writes its registers load here (the emulated mode's program)?
 * @why: why not, or what it found. Synchronous, ~1 ms. SPYRE_NO_EMULATED_RETURNS=1: false.
 */
bool retcheck_emulation_loads(char *why, size_t len);
/* retcheck_start for @mode; RETCHECK_EMULATED runs whenever asked, where the architecture can. */
struct retcheck *retcheck_start_mode(enum retcheck_mode mode);
/*
 * bpf/spyre.bpf.c's programs that do probed instructions themselves (returns and entries done
 * by BPF), by name: the one list the tracer's own ids (tracer_emu_prog_ids) and the search for
 * another process's (retcheck_emulation_ok) both come from.
 */
#define RETCHECK_EMU_PROGS	3
extern const char *const retcheck_emu_progs[RETCHECK_EMU_PROGS];
/*
 * RETCHECK_EMULATED's verdict: may return sites return by themselves (and the entry program do
 * a probed mov or lea)? Only where the test passed and no other process has programs that do
 * probed instructions themselves: another spyre-bpftrace's (bpf/spyre.bpf.c *_emu, found by
 * their names among the kernel's programs; @own: the ids of this process's own, @nown of them).
 * The kernel runs every program on a uprobe before it skips the single step, so two of them on
 * one return would each return (the job's stack popped twice). @why: what decided.
 * @rc NULL (not run): false, @why left as retcheck_emulation_loads wrote it.
 */
bool retcheck_emulation_ok(struct retcheck *rc, const unsigned int *own, int nown, char *why,
			   size_t len);


/*
 * Start the test in the background (a thread and a child process; 30-120 ms on the x86-64
 * development VM, 0.1-2 s in the TCG guests); NULL if not run here.
 */
struct retcheck *retcheck_start(void);
/*
 * Wait for the verdict (at most 8 s: a child that hangs is killed after 5; no verdict by then
 * is RETCHECK_FAILED too). @why: for RETCHECK_FAILED, why return sites are off, for the user;
 * else what was seen. A static string either way.
 */
enum retcheck_verdict retcheck_wait(struct retcheck *rc, const char **why);
/* Wait for the background work to end (the uprobe's removal) and free. */
void retcheck_free(struct retcheck *rc);

#endif
