// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tailjob READY N DONE: writes its pid to READY, waits for SIGUSR1, then N times each of
 * libtailrt's launch functions (and tail_wait, tail_complete for each op), then N times
 * tail_alloc and tail_free, and writes to DONE its ground truth, one JSON object: per function
 * the ids it got back and how long the tail-called callee worked on each (ns), as the program
 * itself measured them; for tail_alloc the pointers it got and the sizes it asked for.
 */
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include "tail.h"

static void write_atomic(const char *path, const std::string &s)
{
	std::string tmp = std::string(path) + ".tmp";
	FILE *f = fopen(tmp.c_str(), "w");

	if (!f || fputs(s.c_str(), f) < 0 || fclose(f) || rename(tmp.c_str(), path)) {
		perror(path);
		exit(1);
	}
}

typedef uint64_t (*fn_t)(uint64_t);

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		fn_t fn;
	} fns[] = {
		{ "tail_launch", tail_launch },
		{ "tail_launch_traced", tail_launch_traced },
		{ "tail_launch_plt", tail_launch_plt },
		{ "tail_launch_chain", tail_launch_chain },
		{ "tail_launch_indirect", tail_launch_indirect },
		{ "tail_launch_cond", tail_launch_cond },
	};
	sigset_t sigs;
	int sig;

	if (argc != 4) {
		fprintf(stderr, "usage: tailjob READY N DONE\n");
		return 2;
	}
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGUSR1);
	sigaddset(&sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &sigs, nullptr);
	write_atomic(argv[1], std::to_string(getpid()) + "\n");
	if (sigwait(&sigs, &sig) || sig != SIGUSR1)
		return 0;

	long n = atol(argv[2]);
	std::string out = "{";
	std::string waits = "\"tail_wait\":{\"ret\":[", waitns = "\"work_ns\":[";

	for (size_t k = 0; k < sizeof(fns) / sizeof(fns[0]); k++) {
		std::string ids, ns;

		for (long i = 0; i < n; i++) {
			uint64_t id = fns[k].fn(1000 + i);
			uint64_t w = tail_last_work_ns();

			ids += (i ? "," : "") + std::to_string(id);
			ns += (i ? "," : "") + std::to_string(w);
			uint64_t got = tail_wait(id);
			if (got != id) {
				fprintf(stderr, "tail_wait(%llu) = %llu\n", (unsigned long long)id,
					(unsigned long long)got);
				return 1;
			}
			waits += (k || i ? "," : "") + std::to_string(got);
			waitns += (k || i ? "," : "") + std::to_string(tail_last_work_ns());
			tail_complete(id);
			tail_release(malloc(64));
		}
		out += "\"" + std::string(fns[k].name) + "\":{\"ret\":[" + ids + "],\"work_ns\":[" +
		       ns + "]},";
	}
	// allocations through a tail jump, each freed at once, in eight sizes: the pointers
	// differ from call to call, and malloc hands each freed block out again to a later call
	// of its size, so a free the ledger missed shows as a pointer allocated twice (freesMissed)
	std::string ptrs, sizes;

	for (long i = 0; i < n; i++) {
		uint64_t bytes = 64 + 16 * (i % 8);
		void *p = tail_alloc(bytes);

		if (!p) {
			fprintf(stderr, "tail_alloc(%llu) failed\n", (unsigned long long)bytes);
			return 1;
		}
		ptrs += (i ? "," : "") + std::to_string((uintptr_t)p);
		sizes += (i ? "," : "") + std::to_string(bytes);
		tail_free(p);
	}
	out += "\"tail_alloc\":{\"ret\":[" + ptrs + "],\"bytes\":[" + sizes + "]},";
	out += waits + "]," + waitns + "]}}\n";
	write_atomic(argv[3], out);
	sigwait(&sigs, &sig);	// linger until told: the tracer reads our maps until the end
	return 0;
}
