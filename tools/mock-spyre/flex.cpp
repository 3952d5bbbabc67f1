// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// libflex.so mock: runtime init, allocator, and streams whose "device" is one worker thread each.

#include "flex.h"
#include "mockstats.h"
#include "senlib.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>

// Exported, never inlined nor cloned: every call from the job and between these functions must be
// a real call to the symbol a tracer probes.
#define MOCK_API __attribute__((visibility("default"), noinline, noclone))

using mock_spyre::countCall;

namespace {

constexpr int kMaxDevices = senlib::SenDevice::kMaxDevices;
// Simulated host<->device link: 8 GB/s is 8 bytes per nanosecond.
constexpr uint64_t kLinkBytesPerNs = 8;
// Shorter remainders are not worth a sleep: the wakeup latency alone is larger.
constexpr uint64_t kMinSleepNs = 1000;

std::mutex g_rt_lock;
std::atomic<int> g_num_devices{0};
std::atomic<senlib::SenDevice *> g_devices[kMaxDevices];
std::atomic<uint64_t> g_next_op{1};

uint64_t now_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sleep_until_ns(uint64_t deadline)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(deadline / 1000000000ull);
	ts.tv_nsec = (long)(deadline % 1000000000ull);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR)
		;
}

// Kernels differ only by the constant they add, derived from the name, so the result depends on
// which kernels ran in which order but never on timing.
uint32_t kernel_salt(const char *kernel)
{
	uint32_t h = 2166136261u;

	if (!kernel)
		return 1;
	for (const unsigned char *p = (const unsigned char *)kernel; *p; p++) {
		h ^= *p;
		h *= 16777619u;
	}
	return h | 1;
}

struct Op {
	uint64_t id;
	int kind;
	void *dst;
	const void *src;
	size_t bytes;
	size_t elems;
	uint32_t salt;
	void (*fn)(void *);
	void *arg;
	uint64_t duration_ns;
};

} // namespace

namespace flex {

struct __attribute__((visibility("hidden"))) RuntimeStream::Impl {
	RuntimeStream *owner;
	std::mutex lock;
	std::condition_variable work_cv;
	std::condition_variable idle_cv;
	std::deque<Op> queue;
	// Counted in launch order, so synchronize() can wait for "everything launched before me"
	// even while other threads keep launching.
	uint64_t launched = 0;
	uint64_t completed = 0;
	bool stop = false;
	std::atomic<uint64_t> last_control_block{0};
	std::thread worker;

	void run();
	void execute(const Op &op);
	uint64_t submit(Op &op);
};

void RuntimeStream::Impl::execute(const Op &op)
{
	uint64_t start = now_ns();

	switch (op.kind) {
	case detail::OP_H2D:
	case detail::OP_D2H:
		memcpy(op.dst, op.src, op.bytes);
		break;
	case detail::OP_COMPUTE: {
		uint32_t *x = (uint32_t *)op.dst;

		for (size_t i = 0; i < op.elems; i++)
			x[i] = x[i] * 3u + op.salt;
		break;
	}
	case detail::OP_HOST_CALLBACK:
		op.fn(op.arg);
		break;
	}
	if (op.duration_ns >= kMinSleepNs) {
		uint64_t deadline = start + op.duration_ns;

		if (deadline > now_ns() + kMinSleepNs)
			sleep_until_ns(deadline);
	}
}

void RuntimeStream::Impl::run()
{
	std::unique_lock<std::mutex> lk(lock);

	for (;;) {
		work_cv.wait(lk, [this] { return stop || !queue.empty(); });
		if (queue.empty())
			break; /* stopping, and drained */
		Op op = queue.front();
		queue.pop_front();
		lk.unlock();

		execute(op);
		detail::operationComplete(owner, op.id, op.kind, op.bytes);
		mock_spyre::countCompletion();

		lk.lock();
		completed++;
		if (completed == launched)
			idle_cv.notify_all();
	}
}

// Queues op and rings the device's doorbell; returns the op id.
uint64_t RuntimeStream::Impl::submit(Op &op)
{
	int dev = owner->device_;

	{
		std::lock_guard<std::mutex> lk(lock);

		queue.push_back(op);
		launched++;
	}
	work_cv.notify_one();
	if (dev >= 0 && dev < kMaxDevices) {
		senlib::SenDevice *sd = g_devices[dev].load(std::memory_order_acquire);

		if (sd)
			sd->writeDoorbell((uint32_t)owner->id_, op.id);
	}
	return op.id;
}

MOCK_API int initializeRuntime(int num_devices)
{
	countCall(mock_spyre::API_INITIALIZE_RUNTIME);
	if (num_devices < 1 || num_devices > kMaxDevices)
		return -EINVAL;

	std::lock_guard<std::mutex> lk(g_rt_lock);
	int have = g_num_devices.load(std::memory_order_relaxed);

	if (have)
		return have == num_devices ? 0 : -EBUSY;
	for (int i = 0; i < num_devices; i++) {
		senlib::SenDevice *sd = senlib::SenDevice::open(i);

		if (!sd) {
			while (i-- > 0)
				g_devices[i].exchange(nullptr)->close();
			return -ENODEV;
		}
		g_devices[i].store(sd, std::memory_order_release);
	}
	g_num_devices.store(num_devices, std::memory_order_release);
	return 0;
}

MOCK_API int getNumDevices()
{
	countCall(mock_spyre::API_GET_NUM_DEVICES);
	return g_num_devices.load(std::memory_order_acquire);
}

MOCK_API void shutdownRuntime()
{
	countCall(mock_spyre::API_SHUTDOWN_RUNTIME);

	std::lock_guard<std::mutex> lk(g_rt_lock);
	int n = g_num_devices.exchange(0, std::memory_order_acq_rel);

	for (int i = 0; i < n; i++) {
		senlib::SenDevice *sd = g_devices[i].exchange(nullptr, std::memory_order_acq_rel);

		if (sd)
			sd->close();
	}
}

struct __attribute__((visibility("hidden"))) FlexAllocator::Impl {
	std::mutex lock;
	std::unordered_set<void *> live;
};

MOCK_API FlexAllocator::FlexAllocator(int device) : impl_(new Impl), device_(device)
{
	countCall(mock_spyre::API_ALLOCATOR_CTOR);
}

FlexAllocator::~FlexAllocator()
{
	for (void *p : impl_->live)
		free(p);
	delete impl_;
}

MOCK_API void *FlexAllocator::allocate(size_t bytes, int flags)
{
	countCall(mock_spyre::API_ALLOCATE);
	(void)flags;

	// aligned_alloc wants a multiple of the alignment; 0 bytes still gets a unique pointer.
	size_t rounded = (bytes + 63) & ~(size_t)63;

	if (rounded < bytes)
		return nullptr;
	if (!rounded)
		rounded = 64;
	void *p = aligned_alloc(64, rounded);

	if (!p)
		return nullptr;
	try {
		std::lock_guard<std::mutex> lk(impl_->lock);

		impl_->live.insert(p);
	} catch (...) {
		free(p);
		return nullptr;
	}
	return p;
}

MOCK_API void FlexAllocator::deallocate(void *ptr)
{
	countCall(mock_spyre::API_DEALLOCATE);
	if (!ptr)
		return;

	bool known;
	{
		std::lock_guard<std::mutex> lk(impl_->lock);

		known = impl_->live.erase(ptr) != 0;
	}
	if (known)
		free(ptr);
	else
		fprintf(stderr, "flex: device %d: deallocate of unknown pointer %p\n", device_,
			ptr);
}

MOCK_API RuntimeStream::RuntimeStream(int device, int id)
	: impl_(new Impl), device_(device), id_(id)
{
	countCall(mock_spyre::API_STREAM_CTOR);
	impl_->owner = this;
	impl_->worker = std::thread([impl = impl_] { impl->run(); });

	// Named from here, not from the worker, so the name is in place when the constructor
	// returns (a tracer may list threads right after). Names are capped at 15 characters.
	char name[16];

	snprintf(name, sizeof(name), "spyre-d%ds%d", device, id);
	pthread_setname_np(impl_->worker.native_handle(), name);
}

MOCK_API RuntimeStream::~RuntimeStream()
{
	countCall(mock_spyre::API_STREAM_DTOR);
	{
		std::lock_guard<std::mutex> lk(impl_->lock);

		impl_->stop = true;
	}
	impl_->work_cv.notify_one();
	impl_->worker.join();
	delete impl_;
}

MOCK_API uint64_t RuntimeStream::launchOperationH2D(void *dev_dst, const void *host_src,
						    size_t bytes)
{
	countCall(mock_spyre::API_LAUNCH_H2D);
	if (bytes && (!dev_dst || !host_src))
		return 0;

	Op op = {};

	op.id = g_next_op.fetch_add(1, std::memory_order_relaxed);
	op.kind = detail::OP_H2D;
	op.dst = dev_dst;
	op.src = host_src;
	op.bytes = bytes;
	op.duration_ns = bytes / kLinkBytesPerNs;
	return impl_->submit(op);
}

MOCK_API uint64_t RuntimeStream::launchOperationD2H(void *host_dst, const void *dev_src,
						    size_t bytes)
{
	countCall(mock_spyre::API_LAUNCH_D2H);
	if (bytes && (!host_dst || !dev_src))
		return 0;

	Op op = {};

	op.id = g_next_op.fetch_add(1, std::memory_order_relaxed);
	op.kind = detail::OP_D2H;
	op.dst = host_dst;
	op.src = dev_src;
	op.bytes = bytes;
	op.duration_ns = bytes / kLinkBytesPerNs;
	return impl_->submit(op);
}

MOCK_API uint64_t RuntimeStream::launchOperationCompute(const char *kernel, void *dev_buf,
							size_t elems, uint64_t work_ns)
{
	countCall(mock_spyre::API_LAUNCH_COMPUTE);
	if (elems && !dev_buf)
		return 0;

	Op op = {};

	op.id = g_next_op.fetch_add(1, std::memory_order_relaxed);
	op.kind = detail::OP_COMPUTE;
	op.dst = dev_buf;
	op.elems = elems;
	op.bytes = elems * sizeof(uint32_t);
	op.salt = kernel_salt(kernel);
	op.duration_ns = work_ns;
	detail::encodeControlBlock(this, op.id);
	return impl_->submit(op);
}

MOCK_API uint64_t RuntimeStream::launchOperationHostCallback(void (*fn)(void *), void *arg)
{
	countCall(mock_spyre::API_LAUNCH_HOST_CALLBACK);
	if (!fn)
		return 0;

	Op op = {};

	op.id = g_next_op.fetch_add(1, std::memory_order_relaxed);
	op.kind = detail::OP_HOST_CALLBACK;
	op.fn = fn;
	op.arg = arg;
	return impl_->submit(op);
}

MOCK_API void RuntimeStream::synchronize()
{
	countCall(mock_spyre::API_SYNCHRONIZE);

	std::unique_lock<std::mutex> lk(impl_->lock);
	uint64_t target = impl_->launched;

	impl_->idle_cv.wait(lk, [this, target] { return impl_->completed >= target; });
}

MOCK_API bool RuntimeStream::query()
{
	countCall(mock_spyre::API_QUERY);

	std::lock_guard<std::mutex> lk(impl_->lock);

	return impl_->completed == impl_->launched;
}

MOCK_API int RuntimeStream::device() const
{
	countCall(mock_spyre::API_STREAM_DEVICE);
	return device_;
}

MOCK_API int RuntimeStream::id() const
{
	countCall(mock_spyre::API_STREAM_ID);
	return id_;
}

namespace detail {

MOCK_API void encodeControlBlock(RuntimeStream *stream, uint64_t op_id)
{
	countCall(mock_spyre::API_ENCODE_CONTROL_BLOCK);
	if (!stream)
		return;
	// A stand-in for the descriptor the real runtime writes to device memory.
	stream->impl_->last_control_block.store(op_id << 8 | 0x5a, std::memory_order_relaxed);
}

MOCK_API void operationComplete(RuntimeStream *stream, uint64_t op_id, int kind, size_t bytes)
{
	countCall(mock_spyre::API_OPERATION_COMPLETE);
	(void)stream;
	(void)op_id;
	(void)kind;
	(void)bytes;
}

} // namespace detail

} // namespace flex
