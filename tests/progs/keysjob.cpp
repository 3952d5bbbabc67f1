// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// keysjob: the probe-table keys of keys.bats on real -O2 code: a class returned by value
// (through the hidden result pointer), a std::string argument, and void launches on a stream
// that only a synchronize proves complete. Each call's values are known, so the test can
// compare the trace with them exactly. Built twice: with KEYSJOB_LIB the traced functions
// (libkeysjob.so: the tracer probes libraries), without it the job that calls them.
// Per iteration i = 0..2: make_result(i), set_kernel(name i), launch(key 100 + i, bytes
// 4096 (i + 1)), then for i = 2 query_stream() false and true, then sync_stream(); before
// them get_rank() (5) and get_size() (8). With "forward": one more launch (key 200), then
// sync_forward(), which tail-jumps to sync_stream().
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

// Non-trivially copyable: returned through the hidden pointer on every ABI.
struct Result {
	uint64_t a;
	uint64_t b;
	std::vector<int> v;
};

struct Params {
	uint64_t key;
	uint64_t bytes;
};

#define KEEP __attribute__((noinline, used))

Result make_result(uint64_t x);
void set_kernel(const std::string &name);
void launch(void *stream, Params *p);
void sync_stream(void *stream);
bool query_stream(void *stream);
void sync_forward(void *stream);
int get_rank();
int get_size();
// What query_stream answers: the job says when its pretend device is done.
extern volatile int keysjob_ready;

#ifdef KEYSJOB_LIB
KEEP Result make_result(uint64_t x)
{
	Result r;

	r.a = 3 * x;
	r.b = 0x1234;
	r.v.push_back((int)x);
	return r;
}

// The string is only looked at by the tracer.
KEEP void set_kernel(const std::string &name)
{
	asm volatile("" : : "r"(name.data()) : "memory");
}

KEEP void launch(void *stream, Params *p)
{
	asm volatile("" : : "r"(stream), "r"(p) : "memory");
}

KEEP void sync_stream(void *stream)
{
	asm volatile("" : : "r"(stream) : "memory");
}

volatile int keysjob_ready;

// A one-line forwarder: -O2 makes it a tail jump to sync_stream (through the PLT).
KEEP void sync_forward(void *stream)
{
	sync_stream(stream);
}

// What spyre_comms::Context::getRank/getSize would say in a job of 8 ranks.
KEEP int get_rank()
{
	return 5;
}

KEEP int get_size()
{
	return 8;
}

KEEP bool query_stream(void *stream)
{
	asm volatile("" : : "r"(stream) : "memory");
	return keysjob_ready;
}

#else
int main(int argc, char **argv)
{
	static int stream;
	uint64_t sum = (uint64_t)get_rank() + (uint64_t)get_size();

	for (int i = 0; i < 3; i++) {
		Result r = make_result(i);
		/* the last longer than a record carries, as torch-spyre's fallback names are
		 * ("<sdsc_dir>/<inner>/bundle.mlir#<step>"): its end is kept */
		std::string name = i < 2 ? "fused_add#" + std::to_string(i) :
			"/var/tmp/sdsc_" + std::string(70, 'k') + "/inner/bundle.mlir#2";
		Params p = { 100 + (uint64_t)i, 4096 * (uint64_t)(i + 1) };

		sum += r.a + r.v.size();
		set_kernel(name);
		launch(&stream, &p);
		if (i == 2) {
			/* the last one is found done by a query: false first, then true */
			keysjob_ready = 0;
			query_stream(&stream);
			keysjob_ready = 1;
			query_stream(&stream);
		}
		sync_stream(&stream);
	}
	if (argc > 1 && !strcmp(argv[1], "forward")) {
		/* one more launch, synchronized through the forwarder */
		Params p = { 200, 64 };

		launch(&stream, &p);
		sync_forward(&stream);
	}
	printf("%llu\n", (unsigned long long)sum);
	/* alive while the tracer sees its first events: it reads the environment from /proc */
	usleep(500 * 1000);
	return 0;
}
#endif
