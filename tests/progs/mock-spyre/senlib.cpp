// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// libsenlib-dd2.so mock: device handles and doorbells, plus the mock's shared call counters.

#include "senlib.h"
#include "mockstats.h"

#include <linux/vfio.h>
#include <stdio.h>

// Exported, never inlined nor cloned: a tracer must find every call at the symbol it probes.
#define MOCK_API __attribute__((visibility("default"), noinline, noclone))

namespace mock_spyre {

namespace {

std::atomic<uint64_t> g_calls[API_COUNT];
std::atomic<uint64_t> g_completions;
std::atomic<uint64_t> g_ioctls[IOCTL_COUNT];
std::atomic<uint64_t> g_bytes[BYTES_COUNT];
const char *const g_bytes_names[BYTES_COUNT] = { "allocated", "freed", "mapped", "unmapped" };

// index = enum Ioctl
const struct {
	unsigned long cmd;
	const char *name;
} g_ioctl_names[IOCTL_COUNT] = {
	{ VFIO_GET_API_VERSION, "VFIO_GET_API_VERSION" },
	{ VFIO_CHECK_EXTENSION, "VFIO_CHECK_EXTENSION" },
	{ VFIO_SET_IOMMU, "VFIO_SET_IOMMU" },
	{ VFIO_GROUP_GET_STATUS, "VFIO_GROUP_GET_STATUS" },
	{ VFIO_GROUP_SET_CONTAINER, "VFIO_GROUP_SET_CONTAINER" },
	{ VFIO_GROUP_GET_DEVICE_FD, "VFIO_GROUP_GET_DEVICE_FD" },
	{ VFIO_DEVICE_GET_INFO, "VFIO_DEVICE_GET_INFO" },
	{ VFIO_DEVICE_GET_REGION_INFO, "VFIO_DEVICE_GET_REGION_INFO" },
	{ VFIO_DEVICE_GET_IRQ_INFO, "VFIO_DEVICE_GET_IRQ_INFO" },
	{ VFIO_DEVICE_SET_IRQS, "VFIO_DEVICE_SET_IRQS" },
	{ VFIO_DEVICE_RESET, "VFIO_DEVICE_RESET" },
	{ VFIO_IOMMU_MAP_DMA, "VFIO_IOMMU_MAP_DMA" },
	{ VFIO_IOMMU_UNMAP_DMA, "VFIO_IOMMU_UNMAP_DMA" },
};

// Qualified names without parameters, as a demangler prints them; index = enum Api.
const char *const g_names[API_COUNT] = {
	"flex::initializeRuntime",
	"flex::getNumDevices",
	"flex::shutdownRuntime",
	"flex::FlexAllocator::FlexAllocator",
	"flex::FlexAllocator::allocate",
	"flex::FlexAllocator::deallocate",
	"flex::RuntimeStream::RuntimeStream",
	"flex::RuntimeStream::~RuntimeStream",
	"flex::RuntimeStream::launchOperationH2D",
	"flex::RuntimeStream::launchOperationD2H",
	"flex::RuntimeStream::launchOperationCompute",
	"flex::RuntimeStream::launchOperationHostCallback",
	"flex::RuntimeStream::synchronize",
	"flex::RuntimeStream::query",
	"flex::RuntimeStream::device",
	"flex::RuntimeStream::id",
	"flex::detail::encodeControlBlock",
	"flex::detail::operationComplete",
	"senlib::SenDevice::open",
	"senlib::SenDevice::writeDoorbell",
	"senlib::SenDevice::close",
};

} // namespace

// The counters are plain tallies: ordering with the counted work comes from the runtime's own
// locks (a stream's synchronize() happens after its worker counted the completion).
MOCK_API void countCall(int api)
{
	if (api >= 0 && api < API_COUNT)
		g_calls[api].fetch_add(1, std::memory_order_relaxed);
}

MOCK_API uint64_t callCount(int api)
{
	if (api < 0 || api >= API_COUNT)
		return 0;
	return g_calls[api].load(std::memory_order_relaxed);
}

MOCK_API const char *apiName(int api)
{
	if (api < 0 || api >= API_COUNT)
		return "?";
	return g_names[api];
}

MOCK_API void countCompletion()
{
	g_completions.fetch_add(1, std::memory_order_relaxed);
}

MOCK_API uint64_t completionCount()
{
	return g_completions.load(std::memory_order_relaxed);
}

MOCK_API void resetCounts()
{
	for (auto &c : g_calls)
		c.store(0, std::memory_order_relaxed);
	g_completions.store(0, std::memory_order_relaxed);
	for (auto &c : g_ioctls)
		c.store(0, std::memory_order_relaxed);
	for (auto &c : g_bytes)
		c.store(0, std::memory_order_relaxed);
}

MOCK_API void countBytes(int which, uint64_t n)
{
	if (which >= 0 && which < BYTES_COUNT)
		g_bytes[which].fetch_add(n, std::memory_order_relaxed);
}

MOCK_API uint64_t byteCount(int which)
{
	if (which < 0 || which >= BYTES_COUNT)
		return 0;
	return g_bytes[which].load(std::memory_order_relaxed);
}

MOCK_API const char *bytesName(int which)
{
	return which >= 0 && which < BYTES_COUNT ? g_bytes_names[which] : "?";
}

MOCK_API void countIoctl(unsigned long cmd)
{
	for (int i = 0; i < IOCTL_COUNT; i++) {
		if (g_ioctl_names[i].cmd == cmd) {
			g_ioctls[i].fetch_add(1, std::memory_order_relaxed);
			return;
		}
	}
}

MOCK_API uint64_t ioctlCount(int ioctl)
{
	if (ioctl < 0 || ioctl >= IOCTL_COUNT)
		return 0;
	return g_ioctls[ioctl].load(std::memory_order_relaxed);
}

MOCK_API const char *ioctlName(int ioctl)
{
	if (ioctl < 0 || ioctl >= IOCTL_COUNT)
		return "?";
	return g_ioctl_names[ioctl].name;
}

} // namespace mock_spyre

namespace senlib {

MOCK_API SenDevice *SenDevice::open(int index)
{
	// Handles are never freed: a stale pointer after close() stays safe to dereference.
	static SenDevice pool[kMaxDevices];

	mock_spyre::countCall(mock_spyre::API_SEN_OPEN);
	if (index < 0 || index >= kMaxDevices)
		return nullptr;
	SenDevice *dev = &pool[index];
	dev->index_.store(index, std::memory_order_relaxed);
	dev->opens_.fetch_add(1, std::memory_order_relaxed);
	return dev;
}

MOCK_API void SenDevice::writeDoorbell(uint32_t queue, uint64_t value)
{
	mock_spyre::countCall(mock_spyre::API_SEN_WRITE_DOORBELL);
	bar_[queue % kDoorbells].store(value, std::memory_order_release);
}

MOCK_API void SenDevice::close()
{
	mock_spyre::countCall(mock_spyre::API_SEN_CLOSE);
	if (opens_.fetch_sub(1, std::memory_order_relaxed) <= 0) {
		opens_.fetch_add(1, std::memory_order_relaxed);
		fprintf(stderr, "senlib: device %d closed more often than opened\n",
			index_.load(std::memory_order_relaxed));
	}
}

} // namespace senlib
