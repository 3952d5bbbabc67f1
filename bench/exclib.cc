// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The traced function of the exception benchmark (bench/excbench.cc): exc_call() checks its
 * argument the way a PyTorch op checks shapes (TORCH_CHECK calls an out-of-line function that
 * throws c10::Error), so when asked to, the exception is thrown in a callee and passes through
 * exc_call, the traced call, to exc_call's caller, which catches it. exc_call has no cleanup
 * of its own: no landing pad, the unwinder just pops its frame (as in the crash).
 * Built with -fcf-protection=full, like the Spyre runtime: endbr64, then a push.
 */
#include <cstdint>

namespace excbench {
struct bench_error {
	uint64_t v;
};
}

/* noipa: the caller may not assume which registers it keeps (as with any real callee) */
__attribute__((noipa, visibility("hidden"))) uint64_t exc_leaf(uint64_t x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 3 + 1;
}

/* The out-of-line failure path, as c10::detail::torchCheckFail. */
__attribute__((noipa, noreturn, visibility("hidden"))) void exc_fail(uint64_t v)
{
	throw excbench::bench_error{ v };
}

/* @b lives across the calls: a callee-saved register, hence a push (as in bench_call) */
extern "C" __attribute__((noinline, visibility("default"))) uint64_t exc_call(uint64_t a,
									     uint64_t b,
									     int bad)
{
	uint64_t r = exc_leaf(a);

	if (bad)
		exc_fail(r + b);
	return r ^ exc_leaf(b + r);
}
