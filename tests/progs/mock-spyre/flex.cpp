// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// libflex.so mock: runtime context, allocator, Params, and in-order streams whose "device" is one
// worker thread each. See docs/mock.md.

#include "flex.h"
#include "mockstats.h"

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
#include <utility>
#include <vector>

// Exported; otherwise compiled as the optimizer likes (-O2: inlining, tail calls), as a vendor's
// runtime would be.
#define MOCK_API __attribute__((visibility("default")))

using mock_spyre::countCall;

namespace {

constexpr int kMaxDevices = 64;
// Simulated host<->device link: 8 GB/s is 8 bytes per nanosecond.
constexpr uint64_t kLinkBytesPerNs = 8;
// Shorter remainders are not worth a sleep: the wakeup latency alone is larger.
constexpr uint64_t kMinSleepNs = 1000;

std::mutex g_rt_lock;
std::atomic<int> g_num_devices{0};
std::weak_ptr<flex::RuntimeContext> g_context;


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


enum OpKind { OP_COMPUTE, OP_H2D, OP_D2H, OP_FILL };

// What flex keeps of a launch's params (they are destroyed right after the launch).
struct Op {
	int kind;
	void *dst;
	const void *src;
	size_t bytes;
	size_t elems;
	uint32_t salt;
	uint64_t duration_ns;
	std::function<void(void *)> callback;
};

// The host address behind a mock CompositeAddress (its first chunk).
void *host_of(const flex::CompositeAddress *a)
{
	if (!a || a->chunks().empty())
		return nullptr;
	return (void *)(uintptr_t)a->chunks()[0].addr.offset;
}

} // namespace

namespace flex {

MOCK_API uint64_t CompositeAddress::total_size() const
{
	uint64_t n = 0;

	for (const Chunk &c : chunks_)
		n += c.size;
	return n;
}

struct __attribute__((visibility("hidden"))) RuntimeStream::Impl {
	std::mutex lock;
	std::condition_variable work_cv;
	std::condition_variable idle_cv;
	std::deque<Op> queue;
	// Counted in launch order, so synchronize() can wait for "everything launched before me"
	// even while other threads keep launching.
	uint64_t launched = 0;
	uint64_t completed = 0;
	bool stop = false;
	std::thread worker;

	void run();
	void submit(Op &&op);
	// Inlined: synchronize() waits in its own frame. Were it a tail call, a tracer closing the
	// span at the `jmp` would see synchronize return before the stream drained.
	__attribute__((always_inline)) void wait_for(uint64_t target)
	{
		std::unique_lock<std::mutex> lk(lock);

		idle_cv.wait(lk, [this, target] { return completed >= target; });
	}
};

void RuntimeStream::Impl::run()
{
	std::unique_lock<std::mutex> lk(lock);

	for (;;) {
		work_cv.wait(lk, [this] { return stop || !queue.empty(); });
		if (queue.empty())
			break; /* stopping, and drained */
		Op op = std::move(queue.front());
		queue.pop_front();
		lk.unlock();

		uint64_t start = now_ns();

		switch (op.kind) {
		case OP_H2D:
		case OP_D2H:
			memcpy(op.dst, op.src, op.bytes);
			break;
		case OP_FILL:
			memset(op.dst, 0, op.bytes);
			break;
		case OP_COMPUTE: {
			uint32_t *x = (uint32_t *)op.dst;

			for (size_t i = 0; i < op.elems; i++)
				x[i] = x[i] * 3u + op.salt;
			break;
		}
		}
		if (op.duration_ns >= kMinSleepNs) {
			uint64_t deadline = start + op.duration_ns;

			if (deadline > now_ns() + kMinSleepNs)
				sleep_until_ns(deadline);
		}
		// The DMA is done: its callback runs here, on the worker, before the stream
		// counts the op complete (a synchronize() returns after it).
		if (op.callback) {
			op.callback(nullptr);
			mock_spyre::countCallback();
		}
		mock_spyre::countCompletion();
		op = Op();

		lk.lock();
		completed++;
		if (completed == launched)
			idle_cv.notify_all();
	}
}

void RuntimeStream::Impl::submit(Op &&op)
{
	{
		std::lock_guard<std::mutex> lk(lock);

		queue.push_back(std::move(op));
		launched++;
	}
	work_cv.notify_one();
}

RuntimeStream::RuntimeStream(int device, int id) : impl_(new Impl), device_(device), id_(id)
{
	impl_->worker = std::thread([impl = impl_] { impl->run(); });

	// Named from here, not from the worker, so the name is in place when the stream is
	// returned (a tracer may list threads right after). Names are capped at 15 characters.
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

static void launch_dma(RuntimeStream::Impl *impl, DmaParams *p, int kind)
{
	Op op;
	void *dev = host_of(p->device_address);

	op.kind = kind;
	op.dst = kind == OP_H2D ? dev : p->host_ptr;
	op.src = kind == OP_H2D ? (const void *)p->host_ptr : dev;
	op.bytes = p->size;
	op.elems = 0;
	op.salt = 0;
	op.duration_ns = p->size / kLinkBytesPerNs;
	// Taken, not copied: the functor stays where the caller's std::function put it (the
	// default table pairs the launch and the callback on that address).
	op.callback = std::move(p->callback);
	impl->submit(std::move(op));
}

MOCK_API void RuntimeStream::launchOperationH2D(DmaParams *params)
{
	countCall(mock_spyre::API_LAUNCH_H2D);
	launch_dma(impl_, params, OP_H2D);
}

MOCK_API void RuntimeStream::launchOperationD2H(DmaParams *params)
{
	countCall(mock_spyre::API_LAUNCH_D2H);
	launch_dma(impl_, params, OP_D2H);
}

MOCK_API void RuntimeStream::launchOperationCompute(ComputeParams *params)
{
	countCall(mock_spyre::API_LAUNCH_COMPUTE);

	Op op;
	// The mock's kernel works on its first tensor: x = x*3 + salt(kernel name), so the result
	// depends on which kernels ran in which order, never on timing.
	const CompositeAddress *buf = params->addrs.empty() ? nullptr : params->addrs[0];

	op.kind = OP_COMPUTE;
	op.dst = host_of(buf);
	op.src = nullptr;
	op.bytes = buf ? buf->total_size() : 0;
	op.elems = op.dst ? op.bytes / sizeof(uint32_t) : 0;
	op.salt = kernel_salt(params->kernel_name.c_str());
	// the mock's "program" holds the kernel's duration: its bootstrap offset, in ns
	op.duration_ns = params->bootstrap_offset;
	impl_->submit(std::move(op));
}

MOCK_API void RuntimeStream::launchOperationHostCallback(HostCallbackParams *params)
{
	countCall(mock_spyre::API_LAUNCH_HOST_CALLBACK);

	uint64_t target;
	{
		std::lock_guard<std::mutex> lk(impl_->lock);

		target = impl_->launched;
	}
	// In stream order, but synchronously in the launching thread, as flex does.
	impl_->wait_for(target);
	if (params->fn)
		params->fn(params->arg);
}

MOCK_API void RuntimeStream::synchronize()
{
	countCall(mock_spyre::API_RT_SYNCHRONIZE);

	uint64_t target;
	{
		std::lock_guard<std::mutex> lk(impl_->lock);

		target = impl_->launched;
	}
	impl_->wait_for(target);
}

MOCK_API bool RuntimeStream::query()
{
	countCall(mock_spyre::API_RT_QUERY);

	std::lock_guard<std::mutex> lk(impl_->lock);
	bool done = impl_->completed == impl_->launched;

	if (done)
		mock_spyre::countQueryTrue();
	return done;
}

MOCK_API void RuntimeStream::fillAsync(const CompositeAddress *dst, double value, DataFormats fmt,
				       bool barrier)
{
	Op op;

	(void)value;
	(void)fmt;
	(void)barrier;
	op.kind = OP_FILL;
	op.dst = host_of(dst);
	op.src = nullptr;
	op.bytes = op.dst ? dst->total_size() : 0;
	op.elems = 0;
	op.salt = 0;
	op.duration_ns = op.bytes / kLinkBytesPerNs;
	impl_->submit(std::move(op));
}

MOCK_API DmaParams *createDmaParams(void *host_ptr, size_t size, bool to_device,
				    const CompositeAddress *device_address)
{
	countCall(mock_spyre::API_CREATE_DMA_PARAMS);
	return new DmaParams{ host_ptr, size, to_device, device_address, nullptr, false };
}

MOCK_API void destroyDmaParams(DmaParams *params)
{
	countCall(mock_spyre::API_DESTROY_DMA_PARAMS);
	delete params;
}

MOCK_API ComputeParams *createComputeParams(const CompositeAddress *program,
					    std::vector<const CompositeAddress *> addrs,
					    const std::string &kernel_name,
					    uint64_t bootstrap_offset)
{
	countCall(mock_spyre::API_CREATE_COMPUTE_PARAMS);
	return new ComputeParams{ program, std::move(addrs), kernel_name, bootstrap_offset, false };
}

MOCK_API void destroyComputeParams(ComputeParams *params)
{
	countCall(mock_spyre::API_DESTROY_COMPUTE_PARAMS);
	delete params;
}

MOCK_API HostCallbackParams *createHostCallbackParams(std::function<void(void *)> fn, void *arg,
						      bool pipeline_barrier)
{
	countCall(mock_spyre::API_CREATE_HOST_CALLBACK_PARAMS);
	return new HostCallbackParams{ std::move(fn), arg, pipeline_barrier };
}

MOCK_API void destroyHostCallbackParams(HostCallbackParams *params)
{
	countCall(mock_spyre::API_DESTROY_HOST_CALLBACK_PARAMS);
	delete params;
}

MOCK_API CompositeAddress FlexAllocator::allocate(size_t bytes, const AllocationDirective &directive)
{
	countCall(mock_spyre::API_FLEX_ALLOCATE);

	// Whole pages, as DMA mapping wants; 0 bytes still gets a unique buffer.
	size_t rounded = (bytes + kPage - 1) & ~(size_t)(kPage - 1);

	// Like operator new: a size that cannot be represented throws, unwinding through this
	// (traced) frame and the callers'.
	if (rounded < bytes) {
		mock_spyre::countThrown(mock_spyre::THROWN_FLEX_ALLOCATE);
		throw std::bad_alloc();
	}
	if (!rounded)
		rounded = kPage;
	void *p = aligned_alloc(kPage, rounded);

	if (!p) {
		mock_spyre::countThrown(mock_spyre::THROWN_FLEX_ALLOCATE);
		throw std::bad_alloc();
	}
	mock_spyre::countBytes(mock_spyre::BYTES_ALLOCATED, bytes);
	dma_map(p, rounded);
	return CompositeAddress(Chunk{ { (uint32_t)device_, (uint64_t)(uintptr_t)p }, bytes,
				       directive.device() });
}

MOCK_API void FlexAllocator::deallocate(const CompositeAddress &addr)
{
	countCall(mock_spyre::API_FLEX_DEALLOCATE);

	void *p = host_of(&addr);
	uint64_t bytes = addr.total_size();

	if (!p)
		return;
	mock_spyre::countBytes(mock_spyre::BYTES_FREED, bytes);
	dma_unmap(p, bytes ? (bytes + kPage - 1) & ~(kPage - 1) : kPage);
	free(p);
}

RuntimeContext::RuntimeContext(int num_devices)
	: num_devices_(num_devices), allocator_(std::make_shared<FlexAllocator>(0))
{
	for (int d = 0; d < num_devices; d++)
		defaults_.push_back(new RuntimeStream(d, 0));
}

RuntimeContext::~RuntimeContext()
{
	for (RuntimeStream *s : defaults_)
		delete s;
	std::lock_guard<std::mutex> lk(g_rt_lock);

	g_num_devices.store(0, std::memory_order_release);
	for (int i = 0; i < g_vfio_ndev; i++)
		if (g_vfio_dev[i].device >= 0)
			vfio_ioctl(g_vfio_dev[i].device, VFIO_DEVICE_RESET, nullptr);
	vfio_close_all();
}

MOCK_API RuntimeStream *RuntimeContext::getDefaultStream(int device)
{
	countCall(mock_spyre::API_GET_DEFAULT_STREAM);
	if (device < 0 || device >= num_devices_)
		return nullptr;
	return defaults_[(size_t)device];
}

MOCK_API std::shared_ptr<RuntimeStream> RuntimeContext::createStream(RuntimeStreamPriority priority,
								     int device)
{
	static std::atomic<int> next_id{1};

	countCall(mock_spyre::API_CREATE_STREAM);
	// ids as torch-spyre sees them: 0 the default stream, then normal, then high priority
	int id = next_id.fetch_add(1, std::memory_order_relaxed);

	if (priority == RuntimeStreamPriority::High)
		id += 32;
	return std::make_shared<RuntimeStream>(device, id);
}

MOCK_API std::shared_ptr<FlexAllocator> RuntimeContext::getAllocator()
{
	return allocator_;
}

MOCK_API int initializeRuntime(std::shared_ptr<RuntimeContext> *out, int num_devices)
{
	countCall(mock_spyre::API_INITIALIZE_RUNTIME);
	if (!out || num_devices < 1 || num_devices > kMaxDevices)
		return -EINVAL;

	std::lock_guard<std::mutex> lk(g_rt_lock);

	if (g_num_devices.load(std::memory_order_relaxed))
		return -EBUSY;
	int rc = vfio_open_all(num_devices);

	if (rc)
		return rc;
	g_num_devices.store(num_devices, std::memory_order_release);
	try {
		*out = std::make_shared<RuntimeContext>(num_devices);
	} catch (...) {
		g_num_devices.store(0, std::memory_order_release);
		vfio_close_all();
		return -ENOMEM;
	}
	g_context = *out;
	return 0;
}

MOCK_API uint64_t dmvaToSegmentId(uint64_t dmva)
{
	return dmva >> SEGMENT_SIZE_BITS;
}

MOCK_API int getNumDevices()
{
	countCall(mock_spyre::API_GET_NUM_DEVICES);
	return g_num_devices.load(std::memory_order_acquire);
}

MOCK_API std::shared_ptr<RuntimeContext> getFlexRuntimeContext()
{
	return g_context.lock();
}

} // namespace flex
