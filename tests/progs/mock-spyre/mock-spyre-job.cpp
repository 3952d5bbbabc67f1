// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// mock-spyre-job: plays PyTorch over the mock Spyre stack (torch_spyre/_C.so, libflex.so,
// libspyre_comms.so.1), for tracer tests: training threads run job plans on streams, and rank
// processes (--world-size) make collectives. It reports how often each counted function ran in
// each phase, and a checksum that depends only on the options (never on timing), so a test can
// compare a trace against ground truth. See docs/mock.md.

#include "mockstats.h"
#include "torch_spyre.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

namespace {

const char *const kProg = "mock-spyre-job";

struct Options {
	long devices = 1;
	long threads = 2;
	long streams = 2;
	long iters = 50;
	long bytes = 65536;
	long compute_us = 50;
	long kernels = 3;
	long oom_every = 0;
	long empty_every = 0;
	long stream_churn = 0;
	long rename_at = -1;
	long leak = 0;
	long phases = 1;
	const char *ready_file = nullptr;
	const char *counts_file = nullptr;
	bool wait_go = false;
	bool linger = false;
	bool quiet = false;
	long world_size = 0;
};

const char *const kKernels[] = {
	"embedding_fwd", "attention_fwd", "mlp_fwd",	   "layernorm_fwd",
	"attention_bwd", "mlp_bwd",	  "embedding_bwd", "optimizer_step",
};

// This process's rank and the world's size (1 and 0 without --world-size).
int g_rank;
int g_world;
// The process group of this rank (--world-size); train-0 makes its collectives.
c10d::SpyreCCLBackend *g_backend;

// The name of compute launch k of an iteration: "<kernel>#<k>", as torch-spyre names them
// ("<profiler_name>#<step>").
std::string kernel_name(long k)
{
	return std::string(kKernels[k % (long)(sizeof(kKernels) / sizeof(kKernels[0]))]) + "#" +
	       std::to_string(k);
}

constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;

uint64_t fnv1a64(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = (const unsigned char *)data;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= kFnvPrime;
	}
	return h;
}

uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

// Input data of one iteration: a function of (thread, iteration) only.
void fill_input(unsigned char *buf, size_t len, int thread, uint64_t iter)
{
	uint64_t state = ((uint64_t)(thread + 1) << 40) ^ iter;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t v = splitmix64(&state);

		memcpy(buf + i, &v, 8);
	}
	if (i < len) {
		uint64_t v = splitmix64(&state);

		memcpy(buf + i, &v, len - i);
	}
}

// The host buffer behind a mock device tensor (device memory is host memory in the mock).
unsigned char *host_of(const spyre::DataPtr &p)
{
	auto *ctx = static_cast<spyre::SharedOwnerCtx *>(p.get_context());

	return (unsigned char *)(uintptr_t)ctx->composite_addr.chunks()[0].addr.offset;
}

struct Control {
	std::mutex lock;
	std::condition_variable cv;
	uint64_t generation = 0; /* bumped to start a phase */
	long phase = 0;
	long remaining = 0; /* trainers still running the current phase */
	bool quit = false;
	std::atomic<bool> abort{false}; /* stop at the next iteration boundary */
	pthread_t main_thread;
	const Options *opt = nullptr;
};


struct Trainer {
	int index = 0;
	int device = 0;
	std::vector<spyre::SpyreStream> streams;
	std::vector<unsigned char> host_in;
	std::vector<unsigned char> host_out;
	uint64_t checksum = kFnvBasis;
	bool failed = false;
	bool completed = false; /* ran every iteration of the last phase */
	long leak_left = 0;	/* --leak: frees still to skip in this phase */
	std::vector<std::pair<void *, size_t>> leaked; /* ... and the owner contexts kept */
	std::thread thread;
};

constexpr size_t kCollectiveWords = 8;
enum { CCL_ALLREDUCE, CCL_BROADCAST, CCL_ALLGATHER, CCL_GATHER, CCL_REDUCE, CCL_BARRIER,
       CCL_SENDRECV, CCL_KINDS };

// What rank r contributes to the collective of iteration @iter: word j = (r+1)*(j+1+iter).
int64_t contribution(int r, uint64_t iter, size_t j)
{
	return (int64_t)(r + 1) * (int64_t)(j + 1 + iter);
}

// The collective of an iteration, made by train-0 of every rank: the kinds in turn (send/recv
// only with a peer). Checks what arrived; false when it is wrong or a call failed. The root is
// the last rank: with two ranks, a root of 1 that a tracer reading the wrong argument (the
// reduction, SUM = 0) would not find.
bool run_collective(uint64_t iter)
{
	int kinds = g_world > 1 ? CCL_KINDS : CCL_SENDRECV;
	int kind = (int)(iter % (uint64_t)kinds);
	int root = g_world - 1;
	int64_t buf[kCollectiveWords], rbuf[kCollectiveWords];
	std::vector<std::vector<int64_t>> gathered((size_t)g_world,
						   std::vector<int64_t>(kCollectiveWords));
	spyre_comms::Tensor t = { buf, sizeof(buf), spyre_comms::INT64 };
	// send and recv run at once: separate buffers
	std::vector<spyre_comms::Tensor> ts = { t }, rts = { { rbuf, sizeof(rbuf), t.dtype } }, outs;
	int64_t sum = (int64_t)g_world * (g_world + 1) / 2;
	c10d::WorkPtr w, w2;
	bool ok = true;

	for (size_t j = 0; j < kCollectiveWords; j++)
		buf[j] = contribution(g_rank, iter, j);
	for (auto &g : gathered)
		outs.push_back({ g.data(), sizeof(buf), spyre_comms::INT64 });
	switch (kind) {
	case CCL_ALLREDUCE:
		w = g_backend->allreduce(ts);
		break;
	case CCL_BROADCAST:
		w = g_backend->broadcast(ts, root);
		break;
	case CCL_ALLGATHER:
		w = g_backend->allgather(outs, t);
		break;
	case CCL_GATHER:
		w = g_backend->gather(outs, t, root);
		break;
	case CCL_REDUCE:
		w = g_backend->reduce(ts, root);
		break;
	case CCL_BARRIER:
		w = g_backend->barrier();
		break;
	default: /* a ring: send to the next rank, receive from the previous one */
		w = g_backend->send(ts, (g_rank + 1) % g_world, (int)iter);
		w2 = g_backend->recv(rts, (g_rank + g_world - 1) % g_world, (int)iter);
		break;
	}
	// the timed wait polls query() every 100 µs, as torch-spyre's does
	ok &= w && w->wait(std::chrono::milliseconds(60000));
	ok &= !kind || kind != CCL_SENDRECV || (w2 && w2->wait(std::chrono::milliseconds(60000)));
	for (size_t j = 0; ok && j < kCollectiveWords; j++) {
		switch (kind) {
		case CCL_ALLREDUCE:
			ok = buf[j] == sum * (int64_t)(j + 1 + iter);
			break;
		case CCL_BROADCAST:
			ok = buf[j] == contribution(root, iter, j);
			break;
		case CCL_REDUCE:
			ok = buf[j] ==
			     (g_rank == root ? sum : g_rank + 1) * (int64_t)(j + 1 + iter);
			break;
		case CCL_SENDRECV:
			ok = rbuf[j] == contribution((g_rank + g_world - 1) % g_world, iter, j);
			break;
		case CCL_ALLGATHER:
		case CCL_GATHER:
			for (int r = 0; ok && r < g_world; r++)
				ok = (kind == CCL_GATHER && g_rank != root) ||
				     gathered[(size_t)r][j] == contribution(r, iter, j);
			break;
		}
	}
	if (!ok) {
		fprintf(stderr, "%s: rank %d: collective %d of iteration %llu failed\n", kProg,
			g_rank, kind, (unsigned long long)iter);
		// the other ranks must not wait for this one (nor this one's threads for them)
		spyre_comms::abortWorld();
	}
	return ok;
}

// One iteration; returns false on a runtime failure.
bool run_iteration(Trainer *tr, const Options *opt, uint64_t iter)
{
	size_t bytes = (size_t)opt->bytes;
	size_t nstreams = tr->streams.size();
	spyre::SpyreAllocator &alloc = spyre::SpyreAllocator::instance();
	size_t cur = 0;
	bool ok = true;

	// A job that makes streams as it goes: the new ones exist before the old ones go, so
	// they get other addresses, as long-lived streams of a real job would.
	if (opt->stream_churn && iter && iter % (uint64_t)opt->stream_churn == 0) {
		std::vector<spyre::SpyreStream> fresh;

		for (size_t s = 0; s < nstreams; s++)
			fresh.push_back(spyre::getStreamFromPool(tr->device));
		tr->streams = fresh;
	}
	// A caching allocator that runs out asks for more than the device has, catches the
	// bad_alloc, frees its cache and goes on: the exception leaves through flex and torch-spyre.
	if (opt->oom_every && iter % (uint64_t)opt->oom_every == 0) {
		try {
			spyre::DataPtr p = alloc.allocate(SIZE_MAX);

			ok = false;
		} catch (const std::bad_alloc &) {
			mock_spyre::countThrown(mock_spyre::THROWN_SPYRE_ALLOCATE);
		}
	}
	// An empty tensor (torch.empty(0) on the device): allocate(0) gives a null DataPtr, which
	// has nothing to free (no ReportAndDelete).
	if (opt->empty_every && iter % (uint64_t)opt->empty_every == 0) {
		spyre::DataPtr p = alloc.allocate(0);

		ok &= !p.get() && !p.get_context();
	}
	spyre::DataPtr din = alloc.allocate(bytes);
	spyre::DataPtr dout = alloc.allocate(bytes);
	std::vector<spyre::Tensor> args = {
		{ static_cast<spyre::SharedOwnerCtx *>(din.get_context()) },
		{ static_cast<spyre::SharedOwnerCtx *>(dout.get_context()) },
	};
	auto *in_ctx = args[0].ctx, *out_ctx = args[1].ctx;

	fill_input(tr->host_in.data(), bytes, tr->index, iter);
	{
		spyre::JobPlan plan;

		plan.add(std::make_unique<spyre::JobPlanStepH2D>(tr->host_in.data(),
								 in_ctx->composite_addr));
		spyre::launchJobPlan(tr->streams[0], plan, args);
	}
	// All kernels work on the input: switching streams first waits for the previous one, so
	// the kernels run in launch order whatever the timing.
	for (long k = 0; k < opt->kernels; k++) {
		size_t s = (size_t)k % nstreams;

		if (s != cur) {
			tr->streams[cur].synchronize();
			cur = s;
		}
		spyre::JobPlan plan = spyre::prepareKernel(kernel_name(k),
							   (uint64_t)opt->compute_us * 1000);

		spyre::launchJobPlan(tr->streams[s], plan, args);
	}
	// Waits for the kernels by polling the stream, as a Python loop over Stream.query() does.
	while (!tr->streams[cur].query()) {
		struct timespec ts = { 0, 20000 };

		nanosleep(&ts, nullptr);
	}
	{
		// the host step stages the computed input into the output, which the D2H copies
		// back: in even iterations by the output's segment (DMVA segment 1 of the launch's
		// tensors), which torch-spyre gives a DMA callback, in odd ones by its
		// CompositeAddress, which it does not (job_plan.cpp)
		unsigned char *src = host_of(din), *dst = host_of(dout);
		uint64_t out_segment = (uint64_t)1 << flex::SEGMENT_SIZE_BITS;
		spyre::JobPlan plan;

		plan.add(std::make_unique<spyre::JobPlanStepHostCompute>(
			[src, dst, bytes] { memcpy(dst, src, bytes); }));
		if (iter % 2 == 0)
			plan.add(std::make_unique<spyre::JobPlanStepD2H>(
				out_segment, tr->host_out.data(), bytes));
		else
			plan.add(std::make_unique<spyre::JobPlanStepD2H>(
				out_ctx->composite_addr, tr->host_out.data(), bytes));
		spyre::launchJobPlan(tr->streams[cur], plan, args);
	}
	for (const spyre::SpyreStream &st : tr->streams)
		st.synchronize();
	tr->checksum = fnv1a64(tr->checksum, tr->host_out.data(), bytes);
	if (g_backend && tr->index == 0)
		ok &= run_collective(iter);
	// --leak: the first N input buffers of train-0 in a phase are never given back
	if (tr->leak_left > 0) {
		tr->leak_left--;
		tr->leaked.emplace_back(din.release(), bytes);
	}
	if (!ok)
		fprintf(stderr, "%s: train-%d: runtime call failed\n", kProg, tr->index);
	return ok;
}

void trainer_main(Trainer *tr, Control *ctl)
{
	char name[16];
	uint64_t seen = 0;

	snprintf(name, sizeof(name), "train-%d", tr->index);
	pthread_setname_np(pthread_self(), name);

	for (;;) {
		long phase;
		{
			std::unique_lock<std::mutex> lk(ctl->lock);

			ctl->cv.wait(lk, [&] { return ctl->quit || ctl->generation != seen; });
			if (ctl->quit)
				break;
			seen = ctl->generation;
			phase = ctl->phase;
		}

		const Options *opt = ctl->opt;
		uint64_t base = (uint64_t)(phase - 1) * (uint64_t)opt->iters;
		long i;

		tr->checksum = kFnvBasis;
		// the last phase's leaks are given back now: a tracer attached in between sees
		// frees of blocks allocated before it
		for (auto &b : tr->leaked)
			spyre::SpyreAllocator::ReportAndDelete(b.first);
		tr->leak_left = tr->index == 0 ? opt->leak : 0;
		tr->leaked.clear();
		for (i = 0; i < opt->iters && !tr->failed; i++) {
			if (ctl->abort.load(std::memory_order_relaxed))
				break;
			if (i == opt->rename_at) {
				snprintf(name, sizeof(name), "renamed-%d", tr->index);
				pthread_setname_np(pthread_self(), name);
			}
			if (!run_iteration(tr, opt, base + (uint64_t)i))
				tr->failed = true;
		}
		tr->completed = i == opt->iters && !tr->failed;

		std::lock_guard<std::mutex> lk(ctl->lock);

		// The main thread sleeps in sigwait(): a thread-directed SIGUSR2 wakes it up.
		if (--ctl->remaining == 0)
			pthread_kill(ctl->main_thread, SIGUSR2);
	}
}

void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [options]\n"
		"A training-like loop over the mock Spyre stack (torch_spyre/_C.so, libflex.so,\n"
		"libspyre_comms.so.1).\n"
		"\n"
		"  --devices N       devices to open (1)\n"
		"  --threads T       training threads \"train-<i>\" (2)\n"
		"  --streams S       streams per training thread (2)\n"
		"  --iters N         iterations per phase per thread (50)\n"
		"  --bytes B         bytes per copy (65536)\n"
		"  --compute-us U    simulated time of one compute launch in µs (50)\n"
		"  --kernels K       compute launches per iteration (3)\n"
		"  --oom-every N     every N iterations, first an allocation too large for the\n"
		"                    device, which throws std::bad_alloc (caught) (0: never)\n"
		"  --empty-every N   every N iterations, first an allocation of 0 bytes (an\n"
		"                    empty tensor: a null pointer, nothing to free) (0: never)\n"
		"  --stream-churn N  every N iterations, new streams replace the thread's streams\n"
		"                    (created first, then the old ones destroyed) (0: never)\n"
		"  --rename-at N     training threads rename themselves \"renamed-<i>\" before\n"
		"                    iteration N of each phase (-1: never)\n"
		"  --leak N          skip the deallocation of train-0's first N input buffers\n"
		"                    in each phase (listed in the counts as \"leaked\"); they\n"
		"                    are freed when the next phase starts (0)\n"
		"  --phases P        phases (1)\n"
		"  --ready-file F    write the pid to F (atomically) once all threads exist\n"
		"  --counts FILE     after each phase write the call counts to FILE\n"
		"                    (FILE.<phase> when P > 1)\n"
		"  --wait-go         wait for SIGUSR1 before each phase\n"
		"  --linger          after the last phase wait for SIGTERM/SIGINT\n"
		"  --quiet           do not print the counts to stdout, nor notices to stderr\n"
		"  --world-size N    N rank processes (this program again, with RANK,\n"
		"                    WORLD_SIZE, LOCAL_RANK, AIU_WORLD_RANK_<r>); train-0 of\n"
		"                    each makes one collective an iteration (0: none)\n"
		"  --help            this text\n"
		"Exit status: 0 done (also when stopped by SIGTERM/SIGINT), 1 runtime error,\n"
		"2 bad usage.\n",
		kProg);
}

bool parse_num(const char *opt, const char *arg, long min, long max, long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max) {
		fprintf(stderr, "%s: --%s: expected an integer in [%ld, %ld], got '%s'\n", kProg,
			opt, min, max, arg);
		return false;
	}
	*out = (long)v;
	return true;
}

// Returns 0 to go on, or the exit status.
int parse_options(int argc, char **argv, Options *o)
{
	enum {
		O_DEVICES = 256, O_THREADS, O_STREAMS, O_ITERS, O_BYTES, O_COMPUTE_US, O_KERNELS,
		O_OOM_EVERY, O_EMPTY_EVERY, O_STREAM_CHURN, O_RENAME_AT, O_LEAK, O_PHASES, O_READY,
		O_COUNTS, O_WAIT_GO, O_LINGER, O_QUIET, O_WORLD_SIZE, O_HELP,
	};
	static const struct option longopts[] = {
		{ "devices", required_argument, nullptr, O_DEVICES },
		{ "threads", required_argument, nullptr, O_THREADS },
		{ "streams", required_argument, nullptr, O_STREAMS },
		{ "iters", required_argument, nullptr, O_ITERS },
		{ "bytes", required_argument, nullptr, O_BYTES },
		{ "compute-us", required_argument, nullptr, O_COMPUTE_US },
		{ "kernels", required_argument, nullptr, O_KERNELS },
		{ "oom-every", required_argument, nullptr, O_OOM_EVERY },
		{ "empty-every", required_argument, nullptr, O_EMPTY_EVERY },
		{ "stream-churn", required_argument, nullptr, O_STREAM_CHURN },
		{ "rename-at", required_argument, nullptr, O_RENAME_AT },
		{ "leak", required_argument, nullptr, O_LEAK },
		{ "phases", required_argument, nullptr, O_PHASES },
		{ "ready-file", required_argument, nullptr, O_READY },
		{ "counts", required_argument, nullptr, O_COUNTS },
		{ "wait-go", no_argument, nullptr, O_WAIT_GO },
		{ "linger", no_argument, nullptr, O_LINGER },
		{ "quiet", no_argument, nullptr, O_QUIET },
		{ "world-size", required_argument, nullptr, O_WORLD_SIZE },
		{ "help", no_argument, nullptr, O_HELP },
		{ nullptr, 0, nullptr, 0 },
	};
	int c;
	bool ok = true;

	opterr = 1;
	while ((c = getopt_long(argc, argv, "", longopts, nullptr)) != -1) {
		switch (c) {
		case O_DEVICES:
			ok = parse_num("devices", optarg, 1, 64, &o->devices);
			break;
		case O_THREADS:
			ok = parse_num("threads", optarg, 1, 256, &o->threads);
			break;
		case O_STREAMS:
			ok = parse_num("streams", optarg, 1, 64, &o->streams);
			break;
		case O_ITERS:
			ok = parse_num("iters", optarg, 0, 1000000000L, &o->iters);
			break;
		case O_BYTES:
			ok = parse_num("bytes", optarg, 1, 1L << 30, &o->bytes);
			break;
		case O_COMPUTE_US:
			ok = parse_num("compute-us", optarg, 0, 10000000L, &o->compute_us);
			break;
		case O_KERNELS:
			ok = parse_num("kernels", optarg, 0, 1000000L, &o->kernels);
			break;
		case O_OOM_EVERY:
			ok = parse_num("oom-every", optarg, 0, 1000000L, &o->oom_every);
			break;
		case O_EMPTY_EVERY:
			ok = parse_num("empty-every", optarg, 0, 1000000L, &o->empty_every);
			break;
		case O_STREAM_CHURN:
			ok = parse_num("stream-churn", optarg, 0, 1000000L, &o->stream_churn);
			break;
		case O_RENAME_AT:
			ok = parse_num("rename-at", optarg, -1, 1000000000L, &o->rename_at);
			break;
		case O_LEAK:
			ok = parse_num("leak", optarg, 0, 1000000L, &o->leak);
			break;
		case O_PHASES:
			ok = parse_num("phases", optarg, 1, 1000000L, &o->phases);
			break;
		case O_READY:
			o->ready_file = optarg;
			ok = *optarg;
			break;
		case O_COUNTS:
			o->counts_file = optarg;
			ok = *optarg;
			break;
		case O_WAIT_GO:
			o->wait_go = true;
			break;
		case O_LINGER:
			o->linger = true;
			break;
		case O_QUIET:
			o->quiet = true;
			break;
		case O_WORLD_SIZE:
			ok = parse_num("world-size", optarg, 0, 16, &o->world_size);
			break;
		case O_HELP:
			usage(stdout);
			return -1;
		default: /* getopt_long already said what is wrong */
			ok = false;
			break;
		}
		if (!ok)
			break;
	}
	if (ok && optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", kProg, argv[optind]);
		ok = false;
	}
	if (!ok) {
		fprintf(stderr, "Try '%s --help'.\n", kProg);
		return 2;
	}
	return 0;
}

// Writes a temporary file next to path and renames it, so readers never see a partial file.
int write_atomic(const std::string &path, const std::string &text)
{
	std::string tmp = path + ".tmp." + std::to_string((long)getpid());
	int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	size_t off = 0;
	int err = 0;

	if (fd < 0)
		return -errno;
	while (off < text.size()) {
		ssize_t n = write(fd, text.data() + off, text.size() - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		off += (size_t)n;
	}
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp.c_str(), path.c_str()))
		err = -errno;
	if (err)
		unlink(tmp.c_str());
	return err;
}

std::string counts_json(long phase, uint64_t checksum, long kernels, uint64_t launches_per_kernel,
			const std::vector<std::pair<void *, size_t>> &leaked)
{
	std::string s;
	char buf[160];

	snprintf(buf, sizeof(buf),
		 "{\"pid\":%ld,\"phase\":%ld,\"rank\":%d,\"world_size\":%d,\"checksum\":\"%016llx\","
		 "\"calls\":{",
		 (long)getpid(), phase, g_rank, g_world, (unsigned long long)checksum);
	s += buf;
	for (int api = 0; api < mock_spyre::API_COUNT; api++) {
		snprintf(buf, sizeof(buf), "%s\"%s\":%llu", api ? "," : "",
			 mock_spyre::apiName(api), (unsigned long long)mock_spyre::callCount(api));
		s += buf;
	}
	snprintf(buf, sizeof(buf),
		 "},\"completions\":%llu,\"callbacks\":%llu,\"emptyAllocs\":%llu,"
		 "\"queriesTrue\":%llu,\"ioctls\":{",
		 (unsigned long long)mock_spyre::completionCount(),
		 (unsigned long long)mock_spyre::callbackCount(),
		 (unsigned long long)mock_spyre::emptyAllocCount(),
		 (unsigned long long)mock_spyre::queryTrueCount());
	s += buf;
	for (int i = 0; i < mock_spyre::IOCTL_COUNT; i++) {
		snprintf(buf, sizeof(buf), "%s\"%s\":%llu", i ? "," : "", mock_spyre::ioctlName(i),
			 (unsigned long long)mock_spyre::ioctlCount(i));
		s += buf;
	}
	s += "},\"thrown\":{";
	for (int i = 0; i < mock_spyre::THROWN_COUNT; i++) {
		snprintf(buf, sizeof(buf), "%s\"%s\":%llu", i ? "," : "", mock_spyre::thrownName(i),
			 (unsigned long long)mock_spyre::thrownCount(i));
		s += buf;
	}
	s += "},\"bytes\":{";
	for (int i = 0; i < mock_spyre::BYTES_COUNT; i++) {
		snprintf(buf, sizeof(buf), "%s\"%s\":%llu", i ? "," : "", mock_spyre::bytesName(i),
			 (unsigned long long)mock_spyre::byteCount(i));
		s += buf;
	}
	s += "},\"kernels\":{";
	for (long k = 0; k < kernels; k++) {
		snprintf(buf, sizeof(buf), "%s\"%s\":%llu", k ? "," : "", kernel_name(k).c_str(),
			 (unsigned long long)launches_per_kernel);
		s += buf;
	}
	s += "},\"leaked\":[";
	for (size_t i = 0; i < leaked.size(); i++) {
		snprintf(buf, sizeof(buf), "%s{\"addr\":\"%p\",\"bytes\":%zu}", i ? "," : "",
			 leaked[i].first, leaked[i].second);
		s += buf;
	}
	s += "]}\n";
	return s;
}

struct Signals {
	sigset_t set;
	long pending_go = 0;
	bool stop = false;
	int stop_signal = 0;
};

// Sleeps until one of our signals arrives and records what it means.
void wait_signal(Signals *sig, Control *ctl, bool count_go)
{
	int signo;

	if (sigwait(&sig->set, &signo))
		return;
	switch (signo) {
	case SIGUSR1:
		// A go that arrives early is kept for the next phase.
		if (count_go)
			sig->pending_go++;
		break;
	case SIGTERM:
	case SIGINT:
		sig->stop = true;
		sig->stop_signal = signo;
		ctl->abort.store(true, std::memory_order_relaxed);
		// a rank that stops ends the collectives the others wait in
		spyre_comms::abortWorld();
		break;
	default: /* SIGUSR2: a trainer finished; the caller re-checks */
		break;
	}
}

// The environment of rank @r of @n, as torchrun gives it (plus the mock's shared segment), and
// each rank's card: AIU_WORLD_RANK_<i> = a PCI address.
void rank_environment(int r, int n, const char *shm)
{
	char v[32];

	snprintf(v, sizeof(v), "%d", r);
	setenv("RANK", v, 1);
	setenv("LOCAL_RANK", v, 1);
	snprintf(v, sizeof(v), "%d", n);
	setenv("WORLD_SIZE", v, 1);
	setenv("LOCAL_WORLD_SIZE", v, 1);
	setenv("AIU_WORLD_SIZE", v, 1);
	for (int i = 0; i < n; i++) {
		char k[32];

		snprintf(k, sizeof(k), "AIU_WORLD_RANK_%d", i);
		snprintf(v, sizeof(v), "0000:%02x:00.0", 0x1a + i);
		setenv(k, v, 1);
	}
	setenv("MOCK_SPYRE_SHM", shm, 1);
}

// --world-size N > 1, started without RANK: start the N ranks (this program again, exec'ed with
// torchrun's variables), write the ready file with their pids once each rank wrote its own
// (F.r<rank>), forward SIGUSR1/SIGTERM/SIGINT to them and wait. Exit status: the worst rank's.
int run_launcher(char **argv, const Options &opt, sigset_t *set)
{
	char shm[64];
	std::vector<pid_t> pids;
	size_t alive = 0;
	bool ready = !opt.ready_file;
	int status = 0;
	int rc;

	sigaddset(set, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, set, nullptr);
	rc = spyre_comms::createWorld((int)opt.world_size, shm, sizeof(shm));
	if (rc) {
		fprintf(stderr, "%s: shared memory for the ranks: %s\n", kProg, strerror(-rc));
		return 1;
	}
	for (int r = 0; r < (int)opt.world_size; r++) {
		pid_t pid = fork();

		if (pid < 0) {
			fprintf(stderr, "%s: fork: %s\n", kProg, strerror(errno));
			status = 1;
			break;
		}
		if (!pid) {
			rank_environment(r, (int)opt.world_size, shm);
			execv("/proc/self/exe", argv);
			fprintf(stderr, "%s: exec: %s\n", kProg, strerror(errno));
			_exit(127);
		}
		pids.push_back(pid);
		alive++;
	}
	while (alive) {
		struct timespec poll = { 0, 10 * 1000 * 1000 };
		int signo = sigtimedwait(set, nullptr, &poll);

		if (signo == SIGUSR1 || signo == SIGTERM || signo == SIGINT) {
			for (pid_t p : pids)
				if (p > 0)
					kill(p, signo);
		}
		for (;;) {
			int ws;
			pid_t p = waitpid(-1, &ws, WNOHANG);

			if (p <= 0)
				break;
			for (size_t r = 0; r < pids.size(); r++) {
				if (pids[r] != p)
					continue;
				pids[r] = -p;
				alive--;
				if (WIFSIGNALED(ws))
					fprintf(stderr, "%s: rank %zu (pid %ld) killed by signal %d\n",
						kProg, r, (long)p, WTERMSIG(ws));
			}
			if (!WIFEXITED(ws) || WEXITSTATUS(ws))
				status = status ? status : (WIFEXITED(ws) ? WEXITSTATUS(ws) : 1);
		}
		if (ready || status)
			continue;
		std::string text;

		ready = true;
		for (size_t r = 0; r < pids.size() && ready; r++) {
			ready = !access((std::string(opt.ready_file) + ".r" + std::to_string(r)).c_str(),
					F_OK);
			text += std::to_string((long)pids[r]) + "\n";
		}
		if (ready && (rc = write_atomic(opt.ready_file, text))) {
			fprintf(stderr, "%s: %s: %s\n", kProg, opt.ready_file, strerror(-rc));
			status = 1;
		}
	}
	shm_unlink(shm);
	return status;
}

} // namespace

int main(int argc, char **argv)
{
	Options opt;
	Control ctl;
	Signals sig;
	std::vector<Trainer *> trainers;
	std::string ready_path, suffix;
	int status = 0;
	int ndev = 0;
	int rc;

	// Blocked before any thread exists, so every thread inherits the mask and only the main
	// thread's sigwait() ever takes these signals.
	sigemptyset(&sig.set);
	sigaddset(&sig.set, SIGUSR1);
	sigaddset(&sig.set, SIGUSR2);
	sigaddset(&sig.set, SIGTERM);
	sigaddset(&sig.set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sig.set, nullptr);

	rc = parse_options(argc, argv, &opt);
	if (rc)
		return rc < 0 ? 0 : rc;
	ctl.opt = &opt;
	ctl.main_thread = pthread_self();
	if (opt.ready_file)
		ready_path = opt.ready_file;

	// the ranks of --world-size, or one of them
	if (opt.world_size > 1 && !getenv("RANK"))
		return run_launcher(argv, opt, &sig.set);
	if (opt.world_size) {
		g_world = getenv("WORLD_SIZE") ? atoi(getenv("WORLD_SIZE")) : 1;
		g_rank = getenv("RANK") ? atoi(getenv("RANK")) : 0;
		if (g_world > 1) {
			suffix = ".r" + std::to_string(g_rank);
			if (opt.ready_file)
				ready_path = std::string(opt.ready_file) + suffix;
		}
	}

	rc = spyre::startRuntime((int)opt.devices);
	if (rc) {
		fprintf(stderr, "%s: initializeRuntime: %s\n", kProg, strerror(-rc));
		return 1;
	}
	ndev = spyre::deviceCount();
	if (ndev < 1) {
		fprintf(stderr, "%s: getNumDevices returned %d\n", kProg, ndev);
		spyre::shutdownRuntime();
		return 1;
	}

	try {
		if (opt.world_size) {
			g_backend = new c10d::SpyreCCLBackend();
			if (!g_backend->ok()) {
				fprintf(stderr, "%s: rank %d of %d: no process group\n", kProg, g_rank,
					g_world);
				status = 1;
				goto shutdown;
			}
		}
		for (int t = 0; t < (int)opt.threads; t++) {
			Trainer *tr = new Trainer;

			trainers.push_back(tr);
			tr->index = t;
			tr->device = t % ndev;
			for (int s = 0; s < (int)opt.streams; s++)
				tr->streams.push_back(spyre::getStreamFromPool(tr->device));
			tr->host_in.resize((size_t)opt.bytes);
			tr->host_out.resize((size_t)opt.bytes);
		}
		for (Trainer *tr : trainers) {
			char name[16];

			tr->thread = std::thread(trainer_main, tr, &ctl);
			// Also named here so the name is set before the ready file appears.
			snprintf(name, sizeof(name), "train-%d", tr->index);
			pthread_setname_np(tr->thread.native_handle(), name);
		}
	} catch (const std::exception &e) {
		fprintf(stderr, "%s: setup failed: %s\n", kProg, e.what());
		status = 1;
		goto shutdown;
	}

	if (!ready_path.empty()) {
		rc = write_atomic(ready_path, std::to_string((long)getpid()) + "\n");
		if (rc) {
			fprintf(stderr, "%s: %s: %s\n", kProg, ready_path.c_str(), strerror(-rc));
			status = 1;
			goto shutdown;
		}
	}

	long phase;

	for (phase = 1; phase <= opt.phases; phase++) {
		while (opt.wait_go && !sig.pending_go && !sig.stop)
			wait_signal(&sig, &ctl, true);
		if (sig.stop)
			break;
		if (opt.wait_go)
			sig.pending_go--;

		// Nothing runs between phases (every stream was drained), so the reset is exact.
		mock_spyre::resetCounts();
		{
			std::lock_guard<std::mutex> lk(ctl.lock);

			ctl.phase = phase;
			ctl.remaining = opt.threads;
			ctl.generation++;
		}
		ctl.cv.notify_all();
		for (;;) {
			{
				std::lock_guard<std::mutex> lk(ctl.lock);

				if (!ctl.remaining)
					break;
			}
			wait_signal(&sig, &ctl, opt.wait_go);
		}

		// what torch.spyre.synchronize() does at the end of a step: every stream of every
		// device (all idle by now)
		for (int d = 0; d < ndev; d++)
			spyre::synchronizeDevice(d);

		uint64_t checksum = kFnvBasis;
		bool complete = true;

		for (Trainer *tr : trainers) {
			if (tr->failed)
				status = 1;
			complete &= tr->completed;
			checksum = fnv1a64(checksum, &tr->checksum, sizeof(tr->checksum));
		}
		// An interrupted phase has no meaningful counts: report nothing for it.
		if (status || !complete)
			break;

		std::vector<std::pair<void *, size_t>> leaked;

		for (Trainer *tr : trainers)
			leaked.insert(leaked.end(), tr->leaked.begin(), tr->leaked.end());
		std::string json = counts_json(phase, checksum, opt.kernels,
					       (uint64_t)opt.threads * (uint64_t)opt.iters, leaked);

		if (opt.counts_file) {
			std::string path = opt.counts_file + suffix;

			if (opt.phases > 1)
				path += "." + std::to_string(phase);
			rc = write_atomic(path, json);
			if (rc) {
				fprintf(stderr, "%s: %s: %s\n", kProg, path.c_str(), strerror(-rc));
				status = 1;
				break;
			}
		}
		if (!opt.quiet) {
			fputs(json.c_str(), stdout);
			fflush(stdout);
		}
	}

	// Say so when a signal cut the run short: a test waiting for counts files then knows why.
	if (sig.stop && !opt.quiet)
		fprintf(stderr, "%s: %s received, stopping after %ld of %ld phases\n", kProg,
			sig.stop_signal == SIGINT ? "SIGINT" : "SIGTERM", phase - 1, opt.phases);
	while (opt.linger && !sig.stop && !status)
		wait_signal(&sig, &ctl, false);

shutdown:
	{
		std::lock_guard<std::mutex> lk(ctl.lock);

		ctl.quit = true;
	}
	ctl.cv.notify_all();
	for (Trainer *tr : trainers) {
		if (tr->thread.joinable())
			tr->thread.join();
		delete tr;
	}
	delete g_backend;
	spyre::shutdownRuntime();
	return status;
}
