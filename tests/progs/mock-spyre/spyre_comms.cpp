// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// libspyre_comms.so.1 mock: collectives between rank processes through shared memory.

#include "spyre_comms.h"
#include "mockstats.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>

#define MOCK_API __attribute__((visibility("default")))

using mock_spyre::countCall;

namespace {

constexpr int kMaxRanks = 16;

// A one-message mailbox per (sender, receiver): send waits until it is empty, recv until full.
struct Mailbox {
	std::atomic<uint64_t> sent;
	std::atomic<uint64_t> received;
	uint64_t bytes;
	unsigned char data[spyre_comms::kMaxCollectiveBytes];
};

struct World {
	int size;
	// A barrier of our own (not pthread's): a rank that stops sets `aborted`, and whoever waits
	// for it gives up instead of hanging.
	std::atomic<int> arrived;
	std::atomic<uint64_t> generation;
	std::atomic<int> aborted;
	unsigned char slot[kMaxRanks][spyre_comms::kMaxCollectiveBytes];
	Mailbox mail[kMaxRanks][kMaxRanks];
};

std::mutex g_lock;
std::shared_ptr<spyre_comms::Context> g_world;

void pause_us(long us)
{
	struct timespec ts = { 0, us * 1000 };

	nanosleep(&ts, nullptr);
}

size_t clamp_bytes(const spyre_comms::Tensor &t)
{
	return std::min<size_t>(t.bytes, spyre_comms::kMaxCollectiveBytes);
}

// Element-wise reduction of int64 lanes (the mock's collectives carry INT64 tensors).
void reduce_into(void *dst, const void *src, size_t bytes, spyre_comms::SpyreReductionOpType op)
{
	int64_t *d = (int64_t *)dst;
	const int64_t *s = (const int64_t *)src;

	for (size_t i = 0; i < bytes / sizeof(int64_t); i++)
		d[i] = op == spyre_comms::SpyreReductionOpType::MAX ? std::max(d[i], s[i]) :
								       d[i] + s[i];
}

World *g_shm;

// Returns false when the world was aborted.
bool barrier_wait(World *w)
{
	uint64_t gen = w->generation.load(std::memory_order_acquire);

	if (w->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == w->size) {
		w->arrived.store(0, std::memory_order_relaxed);
		w->generation.fetch_add(1, std::memory_order_acq_rel);
		return true;
	}
	while (w->generation.load(std::memory_order_acquire) == gen) {
		if (w->aborted.load(std::memory_order_acquire))
			return false;
		pause_us(20);
	}
	return true;
}

} // namespace

namespace spyre_comms {

WorkSchedule::~WorkSchedule()
{
	if (thread_.joinable())
		thread_.join();
}

void WorkSchedule::start()
{
	thread_ = std::thread([this] {
		fn_();
		done_.store(true, std::memory_order_release);
	});
	pthread_setname_np(thread_.native_handle(), "spyre-ccl");
}

MOCK_API bool WorkSchedule::query()
{
	countCall(mock_spyre::API_WORK_QUERY);
	return done_.load(std::memory_order_acquire);
}

void WorkSchedule::wait()
{
	if (thread_.joinable())
		thread_.join();
}

Context::Context(int rank, int size, void *shm) : rank_(rank), size_(size), shm_(shm) {}

MOCK_API int Context::getRank() const
{
	countCall(mock_spyre::API_CTX_GET_RANK);
	return rank_;
}

MOCK_API int Context::getSize() const
{
	countCall(mock_spyre::API_CTX_GET_SIZE);
	return size_;
}

// Runs @fn between two barriers of the world: everyone's slot is written before the first,
// read before the second.
static std::shared_ptr<WorkSchedule> exchange(void *shm, int rank, const Tensor *mine,
					      std::function<void(World *)> fn)
{
	World *w = (World *)shm;
	size_t n = mine ? clamp_bytes(*mine) : 0;
	const void *src = mine ? mine->data : nullptr;

	return std::make_shared<WorkSchedule>([w, rank, n, src, fn] {
		if (!w)	/* a world of one */
			return fn(nullptr);
		if (n)
			memcpy(w->slot[rank], src, n);
		if (!barrier_wait(w))
			return;
		fn(w);
		barrier_wait(w);
	});
}

MOCK_API std::shared_ptr<WorkSchedule> Context::allgather(std::vector<Tensor> &outputs,
							  Tensor &input)
{
	countCall(mock_spyre::API_CTX_ALLGATHER);

	Tensor in = input;
	std::vector<Tensor> out = outputs;

	return exchange(shm_, rank_, &input, [in, out, size = size_](World *w) {
		for (int r = 0; r < size && r < (int)out.size(); r++)
			memcpy(out[(size_t)r].data, w ? w->slot[r] : in.data,
			       std::min(clamp_bytes(in), clamp_bytes(out[(size_t)r])));
	});
}

MOCK_API std::shared_ptr<WorkSchedule> Context::allreduce(Tensor &tensor, SpyreReductionOpType op)
{
	countCall(mock_spyre::API_CTX_ALLREDUCE);

	Tensor t = tensor;

	return exchange(shm_, rank_, &tensor, [t, op, rank = rank_, size = size_](World *w) {
		if (!w)
			return;
		for (int r = 0; r < size; r++)
			if (r != rank)
				reduce_into(t.data, w->slot[r], clamp_bytes(t), op);
	});
}

MOCK_API std::shared_ptr<WorkSchedule> Context::barrier()
{
	countCall(mock_spyre::API_CTX_BARRIER);
	return exchange(shm_, rank_, nullptr, [](World *) {});
}

MOCK_API std::shared_ptr<WorkSchedule> Context::broadcast(Tensor &tensor, int root)
{
	countCall(mock_spyre::API_CTX_BROADCAST);

	Tensor t = tensor;

	return exchange(shm_, rank_, &tensor, [t, root, rank = rank_](World *w) {
		if (w && rank != root)
			memcpy(t.data, w->slot[root], clamp_bytes(t));
	});
}

MOCK_API std::shared_ptr<WorkSchedule> Context::gather(std::vector<Tensor> &outputs, Tensor &input,
						       int root)
{
	countCall(mock_spyre::API_CTX_GATHER);

	Tensor in = input;
	std::vector<Tensor> out = outputs;

	return exchange(shm_, rank_, &input, [in, out, root, rank = rank_, size = size_](World *w) {
		if (rank != root)
			return;
		for (int r = 0; r < size && r < (int)out.size(); r++)
			memcpy(out[(size_t)r].data, w ? w->slot[r] : in.data,
			       std::min(clamp_bytes(in), clamp_bytes(out[(size_t)r])));
	});
}

MOCK_API std::shared_ptr<WorkSchedule> Context::reduce(Tensor &tensor, SpyreReductionOpType op,
						       int root)
{
	countCall(mock_spyre::API_CTX_REDUCE);

	Tensor t = tensor;

	return exchange(shm_, rank_, &tensor, [t, root, op, rank = rank_, size = size_](World *w) {
		if (!w || rank != root)
			return;
		for (int r = 0; r < size; r++)
			if (r != rank)
				reduce_into(t.data, w->slot[r], clamp_bytes(t), op);
	});
}

MOCK_API std::shared_ptr<WorkSchedule> Context::send(Tensor &tensor, int dst, int tag)
{
	countCall(mock_spyre::API_CTX_SEND);
	(void)tag;

	World *w = (World *)shm_;
	Tensor t = tensor;
	int rank = rank_, peer = dst;

	return std::make_shared<WorkSchedule>([w, t, peer, rank] {
		if (!w || peer < 0 || peer >= w->size)
			return;
		Mailbox *m = &w->mail[rank][peer];

		while (m->sent.load(std::memory_order_acquire) !=
		       m->received.load(std::memory_order_acquire))
			if (w->aborted.load(std::memory_order_acquire))
				return;
			else
				pause_us(20);
		m->bytes = clamp_bytes(t);
		memcpy(m->data, t.data, m->bytes);
		m->sent.fetch_add(1, std::memory_order_release);
	});
}

MOCK_API std::shared_ptr<WorkSchedule> Context::recv(Tensor &tensor, int src, int tag)
{
	countCall(mock_spyre::API_CTX_RECV);
	(void)tag;

	World *w = (World *)shm_;
	Tensor t = tensor;
	int rank = rank_, peer = src;

	return std::make_shared<WorkSchedule>([w, t, peer, rank] {
		if (!w || peer < 0 || peer >= w->size)
			return;
		Mailbox *m = &w->mail[peer][rank];

		while (m->sent.load(std::memory_order_acquire) ==
		       m->received.load(std::memory_order_acquire))
			if (w->aborted.load(std::memory_order_acquire))
				return;
			else
				pause_us(20);
		memcpy(t.data, m->data, std::min<size_t>(m->bytes, clamp_bytes(t)));
		m->received.fetch_add(1, std::memory_order_release);
	});
}

MOCK_API int createWorld(int world_size, char *name, size_t name_len)
{
	World *w;
	int fd;

	if (world_size < 1 || world_size > kMaxRanks)
		return -EINVAL;
	snprintf(name, name_len, "/mock-spyre-%ld", (long)getpid());
	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, sizeof(World))) {
		int err = -errno;

		close(fd);
		shm_unlink(name);
		return err;
	}
	w = (World *)mmap(nullptr, sizeof(World), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (w == MAP_FAILED) {
		shm_unlink(name);
		return -ENOMEM;
	}
	w->size = world_size;	/* the rest is zero: a fresh segment */
	munmap(w, sizeof(World));
	return 0;
}

MOCK_API int initialize_library()
{
	countCall(mock_spyre::API_COMMS_INITIALIZE);

	std::lock_guard<std::mutex> lk(g_lock);
	const char *rank_s = getenv("RANK"), *size_s = getenv("WORLD_SIZE");
	const char *shm_name = getenv("MOCK_SPYRE_SHM");
	int rank = rank_s ? atoi(rank_s) : 0, size = size_s ? atoi(size_s) : 1;
	void *shm = nullptr;

	if (g_world)
		return 0;
	if (size < 1 || size > kMaxRanks || rank < 0 || rank >= size)
		return -EINVAL;
	if (size > 1) {
		int fd = shm_name ? shm_open(shm_name, O_RDWR | O_CLOEXEC, 0) : -1;

		if (fd < 0)
			return -ENOENT;
		shm = mmap(nullptr, sizeof(World), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		if (shm == MAP_FAILED)
			return -ENOMEM;
	}
	g_world = std::make_shared<Context>(rank, size, shm);
	g_shm = (World *)shm;
	return 0;
}

MOCK_API void abortWorld()
{
	if (g_shm)
		g_shm->aborted.store(1, std::memory_order_release);
}

MOCK_API std::shared_ptr<Context> get_world_context()
{
	countCall(mock_spyre::API_COMMS_WORLD_CONTEXT);

	std::lock_guard<std::mutex> lk(g_lock);

	return g_world;
}

} // namespace spyre_comms
