// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// stackjob: call chains whose every frame is known, for native stacks (--ustack, stack=1;
// tests/e2e/ustack.bats). Built -O2 with frame pointers, as Fedora and Ubuntu build their
// packages, except leaf_mix: a leaf without a frame, whose caller the kernel's frame-pointer walk
// cannot see (the tracer takes it from the return address at entry).
//
//   stackjob READY COUNTS [ROUNDS] [LEAKS]
//
// READY gets the pid; the work starts on SIGUSR1. Each round: run_round -> layer_ok ->
// dev_alloc + dev_free (libstackrt.so); run_round -> compute -> leaf_mix; and in the first LEAKS
// rounds run_round -> layer_leaky -> dev_alloc, never freed. COUNTS gets
//   {"pid":P,"rounds":R,"sum":S,"leaked":[{"addr":"0x...","bytes":N},...]}
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void *dev_alloc(size_t n);
void dev_free(void *p);

#define MAX_LEAKS 64
static void *leaked[MAX_LEAKS];
static size_t leaked_bytes[MAX_LEAKS];
static int nleaked;
static volatile sig_atomic_t go;

__attribute__((noinline, optimize("omit-frame-pointer"))) uint64_t leaf_mix(uint64_t x)
{
	return x * 0x9e3779b97f4a7c15ull ^ (x >> 7);
}

__attribute__((noinline)) uint64_t compute(uint64_t x)
{
	uint64_t r = leaf_mix(x);

	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

__attribute__((noinline)) void layer_ok(size_t n)
{
	void *p = dev_alloc(n);

	__asm__ volatile("" : : "r"(p) : "memory");
	dev_free(p);
}

__attribute__((noinline)) void layer_leaky(size_t n)
{
	void *p = dev_alloc(n);

	__asm__ volatile("" : : "r"(p) : "memory");
	if (nleaked < MAX_LEAKS) {
		leaked_bytes[nleaked] = n;
		leaked[nleaked++] = p;
	}
}

__attribute__((noinline)) uint64_t run_round(int i, int leaks)
{
	uint64_t s;

	layer_ok(1000 + (size_t)i);
	if (i < leaks)
		layer_leaky(5000 + (size_t)i);
	s = compute((uint64_t)i);
	__asm__ volatile("" : "+r"(s));
	return s;
}

static void on_usr1(int sig)
{
	(void)sig;
	go = 1;
}

int main(int argc, char **argv)
{
	int rounds = argc > 3 ? atoi(argv[3]) : 100, leaks = argc > 4 ? atoi(argv[4]) : 5;
	uint64_t sum = 0;
	FILE *f;

	if (argc < 3) {
		fprintf(stderr, "usage: stackjob READY COUNTS [ROUNDS] [LEAKS]\n");
		return 2;
	}
	signal(SIGUSR1, on_usr1);
	f = fopen(argv[1], "w");
	if (!f)
		return 1;
	fprintf(f, "%d\n", getpid());
	fclose(f);
	while (!go)
		usleep(1000);
	for (int i = 0; i < rounds; i++)
		sum += run_round(i, leaks);
	f = fopen(argv[2], "w");
	if (!f)
		return 1;
	fprintf(f, "{\"pid\":%d,\"rounds\":%d,\"sum\":\"%llx\",\"leaked\":[", getpid(), rounds,
		(unsigned long long)sum);
	for (int i = 0; i < nleaked; i++)
		fprintf(f, "%s{\"addr\":\"%p\",\"bytes\":%zu}", i ? "," : "", leaked[i],
			leaked_bytes[i]);
	fprintf(f, "]}\n");
	fclose(f);
	return 0;
}
