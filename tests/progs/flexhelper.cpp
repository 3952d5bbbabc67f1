// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// flexhelper: a tiny client of the mock Spyre runtime for the fault tests (tests/e2e/faults.bats).
// The mock job creates all its threads before it is traced and never forks or execs; this
// program does those things only after the tracer is attached, when told to by SIGUSR1.
//
//   flexhelper READY MODE ARGS...
//     threads N K DONE    start N threads "late-<i>", each K times allocates and frees device
//                         memory (torch-spyre's SpyreAllocator) and calls getNumDevices
//     fork N M DONE       fork: the child calls getNumDevices M times, the parent N times
//     forkdev N DONE      fork; then parent and child each copy in, compute and copy out on
//                         a stream of their own N times, the parent 4096 bytes a copy, the
//                         child 8192; its streams and callbacks sit at the parent's
//                         addresses (the fork's copy of its memory)
//     exec N DONE PROG... call getNumDevices N times, then exec PROG with its arguments
//     tail N DONE         N times flexhelper_tail_outer, which jumps (a tail call) into
//                         flexhelper_tail_inner: two traceable calls that return together
//     longjmp N DONE      N times flexhelper_jump, which longjmps out past its own return;
//                         then getNumDevices N times
//     deepjump N D M DONE N times flexhelper_deep nested D deep, whose innermost call
//                         longjmps out of all of them; then M times flexhelper_deep that
//                         returns (one level); DONE also gets "deepCalls": N*D + M
//     throw N DONE        N times: flexhelper_try_alloc (traceable with --probe) asks the
//                         runtime for an impossible size, which throws std::bad_alloc through
//                         the traced allocate into try_alloc's catch; then N times allocate
//                         outside of it, caught here; then getNumDevices N times
//     inside N CODE DONE  getNumDevices N times; then, DONE written, flexhelper_inside(CODE)
//                         waits inside itself for SIGTERM/SIGINT and exits with CODE there:
//                         a call open when the tracer stops, or when the process exits
//
// READY gets the pid once the runtime is initialized; DONE gets the runtime's call counts (the
// mock job's counts format) once the work is done. Then the program waits for SIGTERM/SIGINT.

#include "mockstats.h"
#include "torch_spyre.h"

#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <new>
#include <string>
#include <thread>
#include <memory>
#include <vector>

static sigset_t g_sigs;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void write_atomic(const char *path, const std::string &text)
{
	std::string tmp = std::string(path) + ".tmp";
	FILE *f = fopen(tmp.c_str(), "w");

	if (!f || fputs(text.c_str(), f) < 0 || fclose(f) || rename(tmp.c_str(), path))
		die(path);
}

static std::string counts_json(const std::string &extra)
{
	std::string s = "{\"pid\":" + std::to_string(getpid()) + extra + ",\"calls\":{";

	for (int api = 0; api < mock_spyre::API_COUNT; api++) {
		s += api ? "," : "";
		s += "\"" + std::string(mock_spyre::apiName(api)) + "\":" +
		     std::to_string(mock_spyre::callCount(api));
	}
	return s + "}}\n";
}

// Returns the signal that ended the wait: SIGUSR1 means go.
static int wait_signal(void)
{
	int sig = 0;

	if (sigwait(&g_sigs, &sig))
		die("sigwait");
	return sig;
}

static void linger(void)
{
	for (;;) {
		int sig = wait_signal();

		if (sig == SIGTERM || sig == SIGINT)
			exit(0);
	}
}

static void calls(long n)
{
	for (long i = 0; i < n; i++)
		if (flex::getNumDevices() != 1)
			die("getNumDevices");
}

// N rounds of H2D, compute, D2H of @bytes on a stream of the pool, each waited for: job plans
// of one step each, as the mock job launches them (three launches a round).
static void device_work(long n, size_t bytes)
{
	spyre::SpyreAllocator &alloc = spyre::SpyreAllocator::instance();
	spyre::SpyreStream stream = spyre::getStreamFromPool(0);
	std::vector<char> host(bytes);
	spyre::DataPtr dev = alloc.allocate(bytes);
	std::vector<spyre::Tensor> args = { { static_cast<spyre::SharedOwnerCtx *>(
		dev.get_context()) } };

	if (!dev.get())
		die("allocate");
	for (long i = 0; i < n; i++) {
		spyre::JobPlan h2d, d2h, kernel = spyre::prepareKernel("forkdev#0", 20000);

		h2d.add(std::make_unique<spyre::JobPlanStepH2D>(host.data(),
								args[0].ctx->composite_addr));
		// by the tensor's segment (DMVA segment 0): the D2H torch-spyre gives a callback
		d2h.add(std::make_unique<spyre::JobPlanStepD2H>((uint64_t)0, host.data(), bytes));
		spyre::launchJobPlan(stream, h2d, args);
		spyre::launchJobPlan(stream, kernel, args);
		spyre::launchJobPlan(stream, d2h, args);
		stream.synchronize();
	}
}

static void worker(int index, long k)
{
	char name[16];

	snprintf(name, sizeof(name), "late-%d", index);
	pthread_setname_np(pthread_self(), name);
	for (long i = 0; i < k; i++) {
		spyre::DataPtr p = spyre::SpyreAllocator::instance().allocate(4096);

		if (!p.get())
			die("allocate");
		spyre::SpyreAllocator::ReportAndDelete(p.release());
		calls(1);
	}
}

/*
 * A tail call: outer's frame becomes inner's, so a return probe on both has one return address
 * slot for two calls (the kernel chains them). Written in assembly: whether a compiler emits a
 * sibling call depends on its flags.
 */
extern "C" long flexhelper_tail_outer(long x);
extern "C" __attribute__((noinline, visibility("default"))) long flexhelper_tail_inner(long x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}
#if defined(__x86_64__)
__asm__(".text\n"
	".globl flexhelper_tail_outer\n"
	".type flexhelper_tail_outer, @function\n"
	"flexhelper_tail_outer:\n"
	"	push %rbp\n"
	"	pop %rbp\n"
	"	jmp flexhelper_tail_inner\n"
	".size flexhelper_tail_outer, .-flexhelper_tail_outer\n");
#else
extern "C" long flexhelper_tail_outer(long x)
{
	return flexhelper_tail_inner(x);
}
#endif

static jmp_buf g_jump;

/* Leaves by longjmp: its return (and its return probe) never happens. */
extern "C" __attribute__((noinline, visibility("default"))) void flexhelper_jump(long x)
{
	if (x >= 0)
		longjmp(g_jump, 1);
}

/* @depth nested calls of itself; the innermost longjmps out of all of them when @jump. */
extern "C" __attribute__((noinline, noipa, visibility("default"))) long flexhelper_deep(long depth,
											   long jump)
{
	long r;

	if (depth <= 1) {
		if (jump)
			longjmp(g_jump, 1);
		return 1;
	}
	r = flexhelper_deep(depth - 1, jump);
	asm volatile("" ::: "memory");	/* not a tail call */
	return r + 1;
}

/*
 * Waits for SIGTERM/SIGINT and exits with @code inside the traced call; returns on SIGUSR1 (a
 * return instruction, so that the call is a span, not entries only).
 */
extern "C" __attribute__((noinline, visibility("default"))) void flexhelper_inside(long code)
{
	for (;;) {
		int sig = wait_signal();

		if (sig == SIGTERM || sig == SIGINT)
			exit((int)code);
		if (sig == SIGUSR1)
			return;
	}
}

static void jumps(long n)
{
	for (volatile long i = 0; i < n; i++)
		if (!setjmp(g_jump))
			flexhelper_jump(i);
	calls(n);
}

/* A caller that catches what the runtime throws: the return of allocate never happens. */
extern "C" __attribute__((noinline, visibility("default"))) int flexhelper_try_alloc(
	flex::FlexAllocator *alloc)
{
	try {
		alloc->allocate(SIZE_MAX, flex::AllocationDirective());
	} catch (const std::bad_alloc &) {
		return 1;
	}
	return 0;
}

static void throws(long n)
{
	flex::FlexAllocator &alloc = *flex::getFlexRuntimeContext()->getAllocator();

	for (long i = 0; i < n; i++)
		if (flexhelper_try_alloc(&alloc) != 1)
			die("try_alloc");
	for (long i = 0; i < n; i++) {
		try {
			alloc.allocate(SIZE_MAX, flex::AllocationDirective());
			die("allocate did not throw");
		} catch (const std::bad_alloc &) {
		}
	}
	calls(n);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: flexhelper READY threads N K DONE | fork N M DONE | "
				"forkdev N DONE | exec N DONE PROG [ARGS...] | tail N DONE | "
				"longjmp N DONE |\n"
				"deepjump N D M DONE | throw N DONE | inside N CODE DONE\n");
		return 2;
	}
	const char *ready = argv[1];
	std::string mode = argv[2];

	sigemptyset(&g_sigs);
	sigaddset(&g_sigs, SIGUSR1);
	sigaddset(&g_sigs, SIGTERM);
	sigaddset(&g_sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &g_sigs, nullptr);

	if (spyre::startRuntime(1))
		die("initializeRuntime");
	mock_spyre::resetCounts();
	write_atomic(ready, std::to_string(getpid()) + "\n");
	if (wait_signal() != SIGUSR1)
		return 0;

	if (mode == "threads" && argc == 6) {
		long n = atol(argv[3]), k = atol(argv[4]);
		std::vector<std::thread> th;

		for (long i = 0; i < n; i++)
			th.emplace_back(worker, (int)i, k);
		for (auto &t : th)
			t.join();
		write_atomic(argv[5], counts_json(""));
		linger();
	} else if (mode == "fork" && argc == 6) {
		long n = atol(argv[3]), m = atol(argv[4]);
		int status;
		pid_t child = fork();

		if (child < 0)
			die("fork");
		if (child == 0) {
			calls(m);
			_exit(0);
		}
		calls(n);
		if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			die("child");
		write_atomic(argv[5], counts_json(",\"child\":" + std::to_string(child)));
		linger();
	} else if (mode == "forkdev" && argc == 5) {
		long n = atol(argv[3]);
		int status;
		pid_t child = fork();

		if (child < 0)
			die("fork");
		if (child == 0) {
			device_work(n, 8192);
			_exit(0);
		}
		device_work(n, 4096);
		if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			die("child");
		write_atomic(argv[4], counts_json(",\"child\":" + std::to_string(child)));
		linger();
	} else if (mode == "tail" && argc == 5) {
		for (long i = 0, n = atol(argv[3]); i < n; i++)
			if (flexhelper_tail_outer(i) != i + 1)
				die("tail call");
		calls(atol(argv[3]));
		write_atomic(argv[4], counts_json(""));
		linger();
	} else if (mode == "longjmp" && argc == 5) {
		jumps(atol(argv[3]));
		write_atomic(argv[4], counts_json(""));
		linger();
	} else if (mode == "deepjump" && argc == 7) {
		long n = atol(argv[3]), depth = atol(argv[4]), m = atol(argv[5]);

		for (volatile long i = 0; i < n; i++)
			if (!setjmp(g_jump))
				flexhelper_deep(depth, 1);
		for (long i = 0; i < m; i++)
			if (flexhelper_deep(1, 0) != 1)
				die("flexhelper_deep");
		write_atomic(argv[6], counts_json(",\"deepCalls\":" + std::to_string(n * depth + m)));
		linger();
	} else if (mode == "throw" && argc == 5) {
		throws(atol(argv[3]));
		write_atomic(argv[4], counts_json(""));
		linger();
	} else if (mode == "inside" && argc == 6) {
		calls(atol(argv[3]));
		write_atomic(argv[5], counts_json(""));
		flexhelper_inside(atol(argv[4]));
	} else if (mode == "exec" && argc >= 6) {
		calls(atol(argv[3]));
		write_atomic(argv[4], counts_json(""));
		// the exec'd program gets a clean signal mask, as if started normally
		pthread_sigmask(SIG_UNBLOCK, &g_sigs, nullptr);
		execv(argv[5], &argv[5]);
		die(argv[5]);
	}
	fprintf(stderr, "flexhelper: bad mode or arguments\n");
	return 2;
}
