// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Near misses of a probe glob that matched nothing: what a user most likely meant. */
#include <stdio.h>
#include <string.h>
#include "resolve/nearmiss.h"
#include "unit.h"

static const char *const torch_names[] = {
	"at::_ops::mv::call", "at::_ops::mm::call", "at::_ops::mm::redispatch",
	"at::_ops::mm_out::call", "at::_ops::addmm::call", "at::native::mm",
	"c10::Error::Error", "at::_ops::bmm::call",
};

static void rank(const char *pat, const char *const *names, int n, char *out, size_t len)
{
	struct nearmiss m = {};

	for (int i = 0; i < n; i++)
		CHECK_EQ_INT(nearmiss_offer(&m, pat, names[i]), 0);
	nearmiss_format(&m, out, len);
	nearmiss_free(&m);
}

TEST(nearmiss_scores)
{
	/* case only, a missing '*' (prefix), inside, edits */
	CHECK_EQ_INT(nearmiss_score("flex::runtimestream::query", "flex::RuntimeStream::query"), 1);
	CHECK_EQ_INT(nearmiss_score("flex::RuntimeStream::launch",
				    "flex::RuntimeStream::launchOperationH2D"), 2);
	CHECK_EQ_INT(nearmiss_score("RuntimeStream::launch",
				    "flex::RuntimeStream::launchOperationH2D"), 3);
	CHECK_EQ_INT(nearmiss_score("flex::RuntimeStream::synchronise",
				    "flex::RuntimeStream::synchronize"), 6);
	CHECK_EQ_INT(nearmiss_score("flex::RuntimStream::synchronize",
				    "flex::RuntimeStream::synchronize"), 6);
	/* '*' and '?' match for free, a set is one character */
	CHECK_EQ_INT(nearmiss_score("flex::*::synchronise", "flex::RuntimeStream::synchronize"), 6);
	CHECK_EQ_INT(nearmiss_score("flex::R?ntimeStream::[sS]ynchronise",
				    "flex::RuntimeStream::synchronize"), 6);
	/* libraries: a version suffix needs the '*' the user left out */
	CHECK_EQ_INT(nearmiss_score("libflexx.so*", "libflex.so"), 6);
	CHECK_EQ_INT(nearmiss_score("libtorch_cpu.so", "libtorch_cpu.so.1.13.0"), 2);
	/* unrelated names are not near */
	CHECK_EQ_INT(nearmiss_score("flex::RuntimeStream::query", "senlib::SenDevice::open"), -1);
	CHECK_EQ_INT(nearmiss_score("foo", "bar"), -1);
	CHECK_EQ_INT(nearmiss_score("", "bar"), -1);
}

TEST(nearmiss_ranking)
{
	char out[256];

	/* "at::_ops::mm:call" parses as symbol "at::_ops::mm" named "call": the names it starts
	 * come first, shortest first */
	rank("at::_ops::mm", torch_names, 8, out, sizeof(out));
	CHECK_STR(out, "at::_ops::mm::call, at::_ops::mm_out::call, at::_ops::mm::redispatch");
	/* one character off: the one-edit names, closest first */
	rank("at::_ops::nm::call", torch_names, 8, out, sizeof(out));
	CHECK_STR(out, "at::_ops::mm::call, at::_ops::mv::call, at::_ops::bmm::call");
	/* nothing near */
	rank("flex::initializeRuntime", torch_names, 8, out, sizeof(out));
	CHECK_STR(out, "");
}

TEST(nearmiss_keeps_the_best_without_duplicates)
{
	struct nearmiss m = {};
	char out[256];

	/* overloads share a qualified name: offered twice, kept once */
	CHECK_EQ_INT(nearmiss_add(&m, 6, "b"), 0);
	CHECK_EQ_INT(nearmiss_add(&m, 6, "b"), 0);
	CHECK_EQ_INT(nearmiss_add(&m, 8, "c"), 0);
	CHECK_EQ_INT(nearmiss_add(&m, 2, "dddd"), 0);
	CHECK_EQ_INT(nearmiss_add(&m, 6, "a"), 0);
	CHECK_EQ_INT(nearmiss_add(&m, 9, "z"), 0);
	CHECK_EQ_INT(nearmiss_add(&m, -1, "y"), 0);
	CHECK_EQ_INT(m.n, 3);
	CHECK_STR(nearmiss_format(&m, out, sizeof(out)), "dddd, a, b");
	nearmiss_free(&m);
	CHECK_EQ_INT(m.n, 0);
}
