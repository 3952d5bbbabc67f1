// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// mock-spyre-job: a training-like loop over the mock Spyre runtime, for tracer tests. It reports
// how often each runtime function ran in each phase, and a checksum that depends only on the
// options (never on timing), so a test can compare a trace against ground truth. See docs/mock.md.

#include "flex.h"
#include "mockstats.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	long stream_churn = 0;
	long rename_at = -1;
	long leak = 0;
	long phases = 1;
	const char *ready_file = nullptr;
	const char *counts_file = nullptr;
	bool wait_go = false;
	bool linger = false;
	bool quiet = false;
};

const char *const kKernels[] = {
	"embedding_fwd", "attention_fwd", "mlp_fwd",	   "layernorm_fwd",
	"attention_bwd", "mlp_bwd",	  "embedding_bwd", "optimizer_step",
};

enum { ALLOC_INPUT = 0x1, ALLOC_OUTPUT = 0x2 };

// Allocations of this phase that threw std::bad_alloc (--oom-every): calls without a return.
std::atomic<uint64_t> g_thrown{0};

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

// Host callback of every iteration: stages the computed input buffer into the output buffer,
// which the following D2H copies back. Runs on the stream's worker, in stream order.
struct StageArgs {
	const void *src;
	void *dst;
	size_t bytes;
};

void stage_output(void *arg)
{
	StageArgs *sa = (StageArgs *)arg;

	memcpy(sa->dst, sa->src, sa->bytes);
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
	flex::FlexAllocator *alloc = nullptr;
	std::vector<flex::RuntimeStream *> streams;
	std::vector<unsigned char> host_in;
	std::vector<unsigned char> host_out;
	uint64_t checksum = kFnvBasis;
	bool failed = false;
	bool completed = false; /* ran every iteration of the last phase */
	long leak_left = 0;	/* --leak: deallocations still to skip in this phase */
	std::vector<std::pair<void *, size_t>> leaked; /* ... and the blocks skipped */
	std::thread thread;
};

// One iteration; returns false on a runtime failure.
bool run_iteration(Trainer *tr, const Options *opt, uint64_t iter)
{
	size_t bytes = (size_t)opt->bytes;
	size_t nstreams = tr->streams.size();
	void *din = tr->alloc->allocate(bytes, ALLOC_INPUT);
	void *dout = tr->alloc->allocate(bytes, ALLOC_OUTPUT);
	bool ok = din && dout;
	size_t cur = 0;

	// A job that makes streams as it goes: the new ones exist before the old ones go, so
	// they get other addresses, as long-lived streams of a real job would.
	if (opt->stream_churn && iter && iter % (uint64_t)opt->stream_churn == 0) {
		std::vector<flex::RuntimeStream *> old = tr->streams;

		for (size_t s = 0; s < nstreams; s++)
			tr->streams[s] = new flex::RuntimeStream(tr->device, old[s]->id());
		for (flex::RuntimeStream *st : old)
			delete st;
	}
	// A caching allocator that runs out asks for more than the device has, catches the
	// bad_alloc, frees its cache and goes on: the exception leaves through the runtime.
	if (opt->oom_every && iter % (uint64_t)opt->oom_every == 0) {
		try {
			tr->alloc->allocate(SIZE_MAX, ALLOC_INPUT);
			ok = false;
		} catch (const std::bad_alloc &) {
			g_thrown.fetch_add(1, std::memory_order_relaxed);
		}
	}
	if (!ok)
		goto out;
	fill_input(tr->host_in.data(), bytes, tr->index, iter);
	ok &= tr->streams[0]->launchOperationH2D(din, tr->host_in.data(), bytes) != 0;
	// All kernels work on one buffer: switching streams first waits for the previous one, so
	// the kernels run in launch order whatever the timing.
	for (long k = 0; k < opt->kernels; k++) {
		size_t s = (size_t)k % nstreams;

		if (s != cur) {
			tr->streams[cur]->synchronize();
			cur = s;
		}
		ok &= tr->streams[s]->launchOperationCompute(
			      kKernels[k % (long)(sizeof(kKernels) / sizeof(kKernels[0]))], din,
			      bytes / sizeof(uint32_t), (uint64_t)opt->compute_us * 1000) != 0;
	}
	{
		StageArgs sa = { din, dout, bytes };

		ok &= tr->streams[cur]->launchOperationHostCallback(stage_output, &sa) != 0;
		ok &= tr->streams[cur]->launchOperationD2H(tr->host_out.data(), dout, bytes) != 0;
		// sa must outlive the callback: drain every stream before it goes out of scope.
		for (flex::RuntimeStream *st : tr->streams)
			st->synchronize();
	}
	if (!tr->streams[cur]->query()) {
		fprintf(stderr, "%s: train-%d: stream busy after synchronize\n", kProg, tr->index);
		ok = false;
	}
	tr->checksum = fnv1a64(tr->checksum, tr->host_out.data(), bytes);
out:
	// --leak: the first N input buffers of train-0 in a phase are never given back
	if (din && tr->leak_left > 0) {
		tr->leak_left--;
		tr->leaked.emplace_back(din, bytes);
		din = nullptr;
	}
	if (din)
		tr->alloc->deallocate(din);
	tr->alloc->deallocate(dout);
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
			tr->alloc->deallocate(b.first);
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
		"A training-like loop over the mock Spyre runtime (libflex.so, libsenlib-dd2.so).\n"
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
		O_OOM_EVERY, O_STREAM_CHURN, O_RENAME_AT, O_LEAK, O_PHASES, O_READY, O_COUNTS,
		O_WAIT_GO, O_LINGER, O_QUIET, O_HELP,
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
		{ "stream-churn", required_argument, nullptr, O_STREAM_CHURN },
		{ "rename-at", required_argument, nullptr, O_RENAME_AT },
		{ "leak", required_argument, nullptr, O_LEAK },
		{ "phases", required_argument, nullptr, O_PHASES },
		{ "ready-file", required_argument, nullptr, O_READY },
		{ "counts", required_argument, nullptr, O_COUNTS },
		{ "wait-go", no_argument, nullptr, O_WAIT_GO },
		{ "linger", no_argument, nullptr, O_LINGER },
		{ "quiet", no_argument, nullptr, O_QUIET },
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

std::string counts_json(long phase, uint64_t checksum,
			const std::vector<std::pair<void *, size_t>> &leaked)
{
	std::string s;
	char buf[128];

	snprintf(buf, sizeof(buf),
		 "{\"pid\":%ld,\"phase\":%ld,\"checksum\":\"%016llx\",\"calls\":{",
		 (long)getpid(), phase, (unsigned long long)checksum);
	s += buf;
	for (int api = 0; api < mock_spyre::API_COUNT; api++) {
		snprintf(buf, sizeof(buf), "%s\"%s\":%llu", api ? "," : "",
			 mock_spyre::apiName(api), (unsigned long long)mock_spyre::callCount(api));
		s += buf;
	}
	snprintf(buf, sizeof(buf), "},\"completions\":%llu,\"ioctls\":{",
		 (unsigned long long)mock_spyre::completionCount());
	s += buf;
	for (int i = 0; i < mock_spyre::IOCTL_COUNT; i++) {
		snprintf(buf, sizeof(buf), "%s\"%s\":%llu", i ? "," : "", mock_spyre::ioctlName(i),
			 (unsigned long long)mock_spyre::ioctlCount(i));
		s += buf;
	}
	snprintf(buf, sizeof(buf), "},\"thrown\":{\"%s\":%llu",
		 mock_spyre::apiName(mock_spyre::API_ALLOCATE),
		 (unsigned long long)g_thrown.load());
	s += buf;
	s += "},\"bytes\":{";
	for (int i = 0; i < mock_spyre::BYTES_COUNT; i++) {
		snprintf(buf, sizeof(buf), "%s\"%s\":%llu", i ? "," : "", mock_spyre::bytesName(i),
			 (unsigned long long)mock_spyre::byteCount(i));
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
		break;
	default: /* SIGUSR2: a trainer finished; the caller re-checks */
		break;
	}
}

} // namespace

int main(int argc, char **argv)
{
	Options opt;
	Control ctl;
	Signals sig;
	std::vector<Trainer *> trainers;
	int status = 0;
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

	rc = flex::initializeRuntime((int)opt.devices);
	if (rc) {
		fprintf(stderr, "%s: initializeRuntime: %s\n", kProg, strerror(-rc));
		return 1;
	}
	int ndev = flex::getNumDevices();

	if (ndev < 1) {
		fprintf(stderr, "%s: getNumDevices returned %d\n", kProg, ndev);
		flex::shutdownRuntime();
		return 1;
	}

	try {
		for (int t = 0; t < (int)opt.threads; t++) {
			Trainer *tr = new Trainer;

			trainers.push_back(tr);
			tr->index = t;
			tr->device = t % ndev;
			tr->alloc = new flex::FlexAllocator(tr->device);
			for (int s = 0; s < (int)opt.streams; s++)
				tr->streams.push_back(new flex::RuntimeStream(
					tr->device, t * (int)opt.streams + s));
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

	if (opt.ready_file) {
		rc = write_atomic(opt.ready_file, std::to_string((long)getpid()) + "\n");
		if (rc) {
			fprintf(stderr, "%s: %s: %s\n", kProg, opt.ready_file, strerror(-rc));
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
		g_thrown = 0;
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
		std::string json = counts_json(phase, checksum, leaked);

		if (opt.counts_file) {
			std::string path = opt.counts_file;

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
		for (flex::RuntimeStream *st : tr->streams)
			delete st;
		delete tr->alloc;
		delete tr;
	}
	flex::shutdownRuntime();
	return status;
}
