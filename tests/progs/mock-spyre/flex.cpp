// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// libflex.so mock: runtime init, allocator, and streams whose "device" is one worker thread each.

#include "flex.h"
#include "mockstats.h"
#include "senlib.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/vfio.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

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

// --- VFIO: the kernel side of setup and allocation (docs/mock.md) ------------------------------
//
// The real runtime drives the card through stock vfio-pci. This one issues the same ioctl
// sequence: on real VFIO nodes when there are any (a VM with vfio-pci), else on stand-in files,
// where every ioctl fails with ENOTTY but still is a real syscall a tracer sees.

constexpr uint64_t kPage = 4096;
// Regions queried per device: the doorbell BAR and config space.
constexpr unsigned kRegions[] = { VFIO_PCI_BAR0_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX };

struct VfioDev {
	int group = -1;		// owned when group_owner
	bool group_owner = false;
	int device = -1;
	int irq = -1;		// eventfd behind MSI-X vector 0
};

VfioDev g_vfio_dev[kMaxDevices];
int g_vfio_ndev;
// MAP/UNMAP_DMA go to the container from any thread; -1 when the runtime is not initialized.
std::atomic<int> g_container{-1};

long vfio_ioctl(int fd, unsigned long cmd, void *arg)
{
	long r = ioctl(fd, cmd, arg);
	int err = errno;

	mock_spyre::countIoctl(cmd);
	return r < 0 ? -err : r;
}

long vfio_ioctl_val(int fd, unsigned long cmd, unsigned long val)
{
	long r = ioctl(fd, cmd, val);
	int err = errno;

	mock_spyre::countIoctl(cmd);
	return r < 0 ? -err : r;
}

// A stand-in node: FLEX_VFIO_DIR/<name> (created), or /dev/null without FLEX_VFIO_DIR.
int open_standin(const std::string &name)
{
	const char *dir = getenv("FLEX_VFIO_DIR");

	if (!dir || !*dir)
		return open("/dev/null", O_RDWR | O_CLOEXEC);
	return open((std::string(dir) + "/" + name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
}

// IOMMU groups to use on real VFIO: FLEX_VFIO_GROUP=N[,M...], else every /dev/vfio/<N>.
std::vector<int> vfio_groups()
{
	std::vector<int> out;
	const char *env = getenv("FLEX_VFIO_GROUP");

	if (env && *env) {
		for (const char *p = env; *p;) {
			char *end;
			long g = strtol(p, &end, 10);

			if (end == p || g < 0)
				break;
			out.push_back((int)g);
			p = *end == ',' ? end + 1 : end;
			if (*end && *end != ',')
				break;
		}
		return out;
	}
	DIR *d = opendir("/dev/vfio");

	if (!d)
		return out;
	while (struct dirent *de = readdir(d)) {
		char *end;
		long g = strtol(de->d_name, &end, 10);

		if (end != de->d_name && !*end)
			out.push_back((int)g);
	}
	closedir(d);
	std::sort(out.begin(), out.end());
	return out;
}

// The first device of an IOMMU group, e.g. "0000:00:04.0" (GROUP_GET_DEVICE_FD wants it).
std::string group_device(int group)
{
	std::string dir = "/sys/kernel/iommu_groups/" + std::to_string(group) + "/devices";
	std::string name;
	DIR *d = opendir(dir.c_str());

	if (!d)
		return name;
	while (struct dirent *de = readdir(d)) {
		if (de->d_name[0] != '.' && (name.empty() || name > de->d_name))
			name = de->d_name;
	}
	closedir(d);
	return name;
}

// Device setup after its group joined the container: info, regions, interrupts.
void vfio_setup_device(VfioDev *vd)
{
	struct vfio_device_info info = {};
	struct vfio_irq_info irq = {};
	char buf[sizeof(struct vfio_irq_set) + sizeof(int32_t)] = {};
	struct vfio_irq_set *set = (struct vfio_irq_set *)buf;
	int32_t efd;

	info.argsz = sizeof(info);
	vfio_ioctl(vd->device, VFIO_DEVICE_GET_INFO, &info);
	for (unsigned idx : kRegions) {
		struct vfio_region_info ri = {};

		ri.argsz = sizeof(ri);
		ri.index = idx;
		vfio_ioctl(vd->device, VFIO_DEVICE_GET_REGION_INFO, &ri);
	}
	irq.argsz = sizeof(irq);
	irq.index = VFIO_PCI_MSIX_IRQ_INDEX;
	vfio_ioctl(vd->device, VFIO_DEVICE_GET_IRQ_INFO, &irq);
	vd->irq = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	efd = vd->irq;
	set->argsz = sizeof(buf);
	set->flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
	set->index = VFIO_PCI_MSIX_IRQ_INDEX;
	set->start = 0;
	set->count = 1;
	memcpy(set->data, &efd, sizeof(efd));
	vfio_ioctl(vd->device, VFIO_DEVICE_SET_IRQS, set);
}

void vfio_close_all()
{
	int c = g_container.exchange(-1);

	for (int i = 0; i < g_vfio_ndev; i++) {
		VfioDev *vd = &g_vfio_dev[i];

		if (vd->device >= 0)
			close(vd->device);
		if (vd->irq >= 0)
			close(vd->irq);
		if (vd->group_owner && vd->group >= 0)
			close(vd->group);
		*vd = VfioDev();
	}
	g_vfio_ndev = 0;
	if (c >= 0)
		close(c);
}

// Container, groups and devices 0..n-1. Real VFIO when FLEX_DEVICE=VFIO (an error when it
// cannot be opened), or when FLEX_DEVICE is unset or anything but MOCK and /dev/vfio/vfio
// exists; stand-ins otherwise. Returns 0 or a negative errno.
int vfio_open_all(int n)
{
	const char *mode = getenv("FLEX_DEVICE");
	bool force_real = mode && !strcmp(mode, "VFIO");
	bool real = force_real || (!(mode && !strcmp(mode, "MOCK")) &&
				   !access("/dev/vfio/vfio", F_OK));
	std::vector<int> groups;
	int container = -1;

	if (real) {
		groups = vfio_groups();
		container = groups.empty() ? -1 : open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
		if (container < 0) {
			if (force_real) {
				fprintf(stderr, "flex: FLEX_DEVICE=VFIO: no usable /dev/vfio/vfio and "
					"group (FLEX_VFIO_GROUP)\n");
				return -ENODEV;
			}
			real = false;
		}
	}
	if (!real)
		container = open_standin("vfio");
	if (container < 0)
		return -errno;
	g_vfio_ndev = n;
	vfio_ioctl(container, VFIO_GET_API_VERSION, nullptr);
	vfio_ioctl_val(container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU);
	for (int i = 0; i < n; i++) {
		VfioDev *vd = &g_vfio_dev[i];
		int gnum = real ? groups[(size_t)i % groups.size()] : i;
		std::string name = real ? group_device(gnum) : "vfio-device-" + std::to_string(i);
		long fd;

		// several devices of one group share it (real VFIO only)
		for (int j = 0; j < i; j++)
			if (real && groups[(size_t)j % groups.size()] == gnum)
				vd->group = g_vfio_dev[j].group;
		if (vd->group < 0) {
			struct vfio_group_status st = {};

			vd->group = real ? open(("/dev/vfio/" + std::to_string(gnum)).c_str(),
						O_RDWR | O_CLOEXEC) :
					   open_standin(std::to_string(gnum));
			if (vd->group < 0) {
				vfio_close_all();
				close(container);
				return -ENODEV;
			}
			vd->group_owner = true;
			st.argsz = sizeof(st);
			vfio_ioctl(vd->group, VFIO_GROUP_GET_STATUS, &st);
			vfio_ioctl(vd->group, VFIO_GROUP_SET_CONTAINER, &container);
			// the IOMMU model is chosen once the first group is in the container
			if (i == 0)
				vfio_ioctl_val(container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU);
		}
		fd = vfio_ioctl(vd->group, VFIO_GROUP_GET_DEVICE_FD, (void *)name.c_str());
		vd->device = fd >= 0 ? (int)fd : open_standin(name);
		vfio_setup_device(vd);
	}
	g_container.store(container, std::memory_order_release);
	return 0;
}

// Pin and map a buffer for the device. The IOVA is the buffer's address (IOVA-as-VA, as
// userspace drivers commonly do), so a trace can tie each MAP_DMA to its allocation.
void dma_map(void *p, uint64_t size)
{
	int c = g_container.load(std::memory_order_acquire);
	struct vfio_iommu_type1_dma_map m = {};

	if (c < 0)
		return;
	m.argsz = sizeof(m);
	m.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
	m.vaddr = (uintptr_t)p;
	m.iova = (uintptr_t)p;
	m.size = size;
	if (vfio_ioctl(c, VFIO_IOMMU_MAP_DMA, &m) == 0)
		mock_spyre::countBytes(mock_spyre::BYTES_MAPPED, size);
}

void dma_unmap(void *p, uint64_t size)
{
	int c = g_container.load(std::memory_order_acquire);
	struct vfio_iommu_type1_dma_unmap u = {};

	if (c < 0)
		return;
	u.argsz = sizeof(u);
	u.iova = (uintptr_t)p;
	u.size = size;
	if (vfio_ioctl(c, VFIO_IOMMU_UNMAP_DMA, &u) == 0)
		mock_spyre::countBytes(mock_spyre::BYTES_UNMAPPED, size);
}

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

// Rings the device's doorbell and queues op; returns the op id. The worker (the device) gets
// the op only after the doorbell, as a card starts on its doorbell write.
uint64_t RuntimeStream::Impl::submit(Op &op)
{
	int dev = owner->device_;

	if (dev >= 0 && dev < kMaxDevices) {
		senlib::SenDevice *sd = g_devices[dev].load(std::memory_order_acquire);

		if (sd)
			sd->writeDoorbell((uint32_t)owner->id_, op.id);
	}
	{
		std::lock_guard<std::mutex> lk(lock);

		queue.push_back(op);
		launched++;
	}
	work_cv.notify_one();
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
	int rc = vfio_open_all(num_devices);

	if (rc)
		return rc;
	for (int i = 0; i < num_devices; i++) {
		senlib::SenDevice *sd = senlib::SenDevice::open(i);

		if (!sd) {
			while (i-- > 0)
				g_devices[i].exchange(nullptr)->close();
			vfio_close_all();
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
	for (int i = 0; i < g_vfio_ndev; i++)
		if (g_vfio_dev[i].device >= 0)
			vfio_ioctl(g_vfio_dev[i].device, VFIO_DEVICE_RESET, nullptr);
	vfio_close_all();
}

struct __attribute__((visibility("hidden"))) FlexAllocator::Impl {
	std::mutex lock;
	std::unordered_map<void *, uint64_t> live;	// buffer -> mapped size
	std::unordered_map<void *, uint64_t> asked;	// buffer -> size the caller asked for
};

MOCK_API FlexAllocator::FlexAllocator(int device) : impl_(new Impl), device_(device)
{
	countCall(mock_spyre::API_ALLOCATOR_CTOR);
}

FlexAllocator::~FlexAllocator()
{
	for (auto &kv : impl_->live) {
		dma_unmap(kv.first, kv.second);
		free(kv.first);
	}
	delete impl_;
}

MOCK_API void *FlexAllocator::allocate(size_t bytes, int flags)
{
	countCall(mock_spyre::API_ALLOCATE);
	(void)flags;

	// Whole pages, as DMA mapping wants; 0 bytes still gets a unique pointer.
	size_t rounded = (bytes + kPage - 1) & ~(size_t)(kPage - 1);

	// Like operator new, and like the real runtime's allocator: a size that cannot be
	// represented throws, unwinding through this (traced) frame into the caller.
	if (rounded < bytes)
		throw std::bad_alloc();
	if (!rounded)
		rounded = kPage;
	void *p = aligned_alloc(kPage, rounded);

	if (!p)
		return nullptr;
	try {
		std::lock_guard<std::mutex> lk(impl_->lock);

		impl_->live.emplace(p, rounded);
		impl_->asked[p] = bytes;
	} catch (...) {
		free(p);
		return nullptr;
	}
	mock_spyre::countBytes(mock_spyre::BYTES_ALLOCATED, bytes);
	dma_map(p, rounded);
	return p;
}

MOCK_API void FlexAllocator::deallocate(void *ptr)
{
	countCall(mock_spyre::API_DEALLOCATE);
	if (!ptr)
		return;

	uint64_t size = 0;
	{
		std::lock_guard<std::mutex> lk(impl_->lock);
		auto it = impl_->live.find(ptr);

		if (it != impl_->live.end()) {
			size = it->second;
			impl_->live.erase(it);
			mock_spyre::countBytes(mock_spyre::BYTES_FREED, impl_->asked[ptr]);
			impl_->asked.erase(ptr);
		}
	}
	if (size) {
		dma_unmap(ptr, size);
		free(ptr);
	} else
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
