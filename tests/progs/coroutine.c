// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// coroutine: traced calls that switch stacks inside (makecontext/swapcontext), for the stack
// switch tests (tests/e2e/exceptions.bats). Each of NCO coroutines runs on a stack of its own
// (mmap'd, a guard page below it, as fiber libraries make them); the main stack's traced calls
// run while the coroutines' traced calls are open, and the other way round.
//
//   coroutine READY COUNTS nested|interleaved|abandoned [ROUNDS]
//
// READY gets the pid; the work starts on SIGUSR1 (so a tracer attaches by pid first); COUNTS
// gets, once the work is done, the format of tests/progs/throwjob.cpp:
//   {"pid":P,"checksum":"X","calls":{"co_step":N,...},"unwound":{"main_jump":N,...}}
// Every call returns except main_jump's, which longjmp leaves (on the main stack, while
// coroutine calls are open). Each round, for each coroutine:
//   nested       co_run (main) switches to the coroutine, whose co_step calls co_leaf, then
//                co_yield, which switches back inside: co_run then calls main_leaf, main_jump
//                (left by longjmp) and main_leaf again, all on the main stack under the open
//                co_step and co_yield, and switches to the coroutine again, where co_yield and
//                co_step return; then co_run returns. In time, every span nests in the one
//                before: a valid trace.
//   interleaved  co_resume switches to the coroutine as above and returns while co_step and
//                co_yield are open on the other stack; main_leaf runs; an untraced switch lets
//                them return. Spans overlap in time, as the calls did.
//   abandoned    as interleaved, but the coroutine is never resumed: each round starts it
//                again on the same stack, leaving co_step and co_yield open for good (neither
//                is counted as unwound here: the last round's stay open, the others are
//                left when their stack is reused).
// The checksum depends only on the mode and ROUNDS (default 200).
//
// The traced functions are plain C, noipa: the compiler must neither inline them, nor clone
// them, nor turn a call into a tail jump.
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define TRACED __attribute__((noinline, noipa, used, visibility("default")))
#define NCO 3
#define STACK_BYTES (64 * 1024)

enum { F_RUN, F_RESUME, F_STEP, F_LEAF, F_YIELD, F_MAIN_LEAF, F_MAIN_JUMP, F_COUNT };

static const char *const names[F_COUNT] = {
	"co_run", "co_resume", "co_step", "co_leaf", "co_yield", "main_leaf", "main_jump",
};

/* one thread: plain counters */
static uint64_t calls[F_COUNT], unwound[F_COUNT];
static ucontext_t main_ctx, co_ctx[NCO];
static jmp_buf jump_back;
static char *stacks[NCO];
static uint64_t sum;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0x100000001b3ull;
}

static void to_main(int co)
{
	if (swapcontext(&co_ctx[co], &main_ctx))
		die("swapcontext");
}

static void to_coroutine(int co)
{
	if (swapcontext(&main_ctx, &co_ctx[co]))
		die("swapcontext");
}

TRACED uint64_t co_leaf(uint64_t x)
{
	calls[F_LEAF]++;
	return mix(x, 0x1eaf);
}

/* Switches to the main stack inside: returns when main switches back. */
TRACED void co_yield(int co)
{
	calls[F_YIELD]++;
	to_main(co);
	__asm__ volatile("" ::: "memory");	/* not a tail call */
}

TRACED uint64_t co_step(int co, uint64_t x)
{
	uint64_t r;

	calls[F_STEP]++;
	r = co_leaf(x);
	co_yield(co);
	return mix(r, (uint64_t)co);
}

/* The coroutine: a step per resume, then back to main outside of any traced call. */
static void co_body(int co)
{
	for (;;) {
		sum = mix(sum, co_step(co, sum));
		to_main(co);
	}
}

TRACED uint64_t main_leaf(uint64_t x)
{
	calls[F_MAIN_LEAF]++;
	return mix(x, 0x3a1);
}

/* Left by longjmp, on the main stack. */
TRACED void main_jump(uint64_t x)
{
	calls[F_MAIN_JUMP]++;
	unwound[F_MAIN_JUMP]++;
	if (x != ~0ull)
		longjmp(jump_back, 1);
}

TRACED uint64_t co_run(int co, uint64_t i)
{
	calls[F_RUN]++;
	to_coroutine(co);	/* co_step, co_leaf, co_yield: back here inside co_yield */
	sum = mix(sum, main_leaf(i));
	if (!setjmp(jump_back))
		main_jump(i);
	sum = mix(sum, main_leaf(i + 1));
	to_coroutine(co);	/* co_yield and co_step return */
	return mix(sum, i);
}

TRACED void co_resume(int co)
{
	calls[F_RESUME]++;
	to_coroutine(co);	/* co_step, co_leaf, co_yield: back here inside co_yield */
	__asm__ volatile("" ::: "memory");
}

/* Coroutine @co from the start of co_body, on its stack. */
static void start_coroutine(int co)
{
	if (getcontext(&co_ctx[co]))
		die("getcontext");
	co_ctx[co].uc_stack.ss_sp = stacks[co];
	co_ctx[co].uc_stack.ss_size = STACK_BYTES;
	co_ctx[co].uc_link = NULL;	/* co_body never returns */
	makecontext(&co_ctx[co], (void (*)(void))co_body, 1, co);
}

static void write_atomic(const char *path, const char *text)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) || rename(tmp, path))
		die(path);
}

int main(int argc, char **argv)
{
	/* static: getcontext returns twice, as setjmp does (-Wclobbered) */
	static long rounds = 200;
	static int nested, abandoned;
	char text[2048], pid[32];
	sigset_t sigs;
	int sig, n;

	if (argc < 4 || argc > 5 || (strcmp(argv[3], "nested") && strcmp(argv[3], "interleaved") &&
				     strcmp(argv[3], "abandoned"))) {
		fprintf(stderr, "usage: coroutine READY COUNTS nested|interleaved|abandoned "
			"[ROUNDS]\n");
		return 2;
	}
	nested = !strcmp(argv[3], "nested");
	abandoned = !strcmp(argv[3], "abandoned");
	if (argc == 5)
		rounds = atol(argv[4]);
	for (int co = 0; co < NCO; co++) {
		char *m = mmap(NULL, STACK_BYTES + 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);

		if (m == MAP_FAILED || mprotect(m, 4096, PROT_NONE))
			die("stack");
		stacks[co] = m + 4096;
		start_coroutine(co);
	}
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGUSR1);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	write_atomic(argv[1], pid);
	if (sigwait(&sigs, &sig))
		die("sigwait");

	for (long i = 0; i < rounds; i++) {
		for (int co = 0; co < NCO; co++) {
			if (nested) {
				sum = mix(sum, co_run(co, (uint64_t)i));
			} else if (abandoned) {
				start_coroutine(co);	/* again, on the same stack */
				co_resume(co);
				sum = mix(sum, main_leaf((uint64_t)i));
			} else {
				co_resume(co);
				sum = mix(sum, main_leaf((uint64_t)i));
				to_coroutine(co);	/* co_yield and co_step return */
			}
		}
	}

	n = snprintf(text, sizeof(text), "{\"pid\":%d,\"checksum\":\"%016llx\",\"calls\":{",
		     (int)getpid(), (unsigned long long)sum);
	for (int f = 0; f < F_COUNT; f++)
		n += snprintf(text + n, sizeof(text) - n, "%s\"%s\":%llu", f ? "," : "", names[f],
			      (unsigned long long)calls[f]);
	n += snprintf(text + n, sizeof(text) - n, "},\"unwound\":{");
	for (int f = 0; f < F_COUNT; f++)
		n += snprintf(text + n, sizeof(text) - n, "%s\"%s\":%llu", f ? "," : "", names[f],
			      (unsigned long long)unwound[f]);
	snprintf(text + n, sizeof(text) - n, "}}\n");
	write_atomic(argv[2], text);
	return 0;
}
