// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// The mock stack's shared call counters (mockstats.h), linked into libflex.so.

#include "mockstats.h"

#include <linux/vfio.h>

#include <atomic>

#define MOCK_API __attribute__((visibility("default")))

namespace mock_spyre {

namespace {

std::atomic<uint64_t> g_calls[API_COUNT];
std::atomic<uint64_t> g_completions;
std::atomic<uint64_t> g_callbacks;
std::atomic<uint64_t> g_empty_allocs;
std::atomic<uint64_t> g_queries_true;
std::atomic<uint64_t> g_thrown[THROWN_COUNT];
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
	"flex::RuntimeContext::getDefaultStream",
	"flex::RuntimeContext::createStream",
	"flex::RuntimeStream::~RuntimeStream",
	"flex::FlexAllocator::allocate",
	"flex::FlexAllocator::deallocate",
	"flex::createDmaParams",
	"flex::destroyDmaParams",
	"flex::createComputeParams",
	"flex::destroyComputeParams",
	"flex::createHostCallbackParams",
	"flex::destroyHostCallbackParams",
	"flex::RuntimeStream::launchOperationH2D",
	"flex::RuntimeStream::launchOperationD2H",
	"flex::RuntimeStream::launchOperationCompute",
	"flex::RuntimeStream::launchOperationHostCallback",
	"flex::RuntimeStream::synchronize",
	"flex::RuntimeStream::query",
	"spyre::launchJobPlan",
	"spyre::prepareKernel",
	"spyre::SpyreStream::launch",
	"spyre::SpyreStream::launchH2D",
	"spyre::SpyreStream::launchD2H",
	"spyre::SpyreStream::launchCompute",
	"spyre::SpyreStream::launchHostCallback",
	"spyre::SpyreStream::synchronize",
	"spyre::SpyreStream::query",
	"spyre::synchronizeDevice",
	"spyre::SpyreAllocator::allocate",
	"spyre::SpyreAllocator::ReportAndDelete",
	"spyre::JobPlanStepD2H::construct::{lambda(void*)#1}",
	"c10d::SpyreCCLBackend::allgather",
	"c10d::SpyreCCLBackend::allreduce",
	"c10d::SpyreCCLBackend::barrier",
	"c10d::SpyreCCLBackend::broadcast",
	"c10d::SpyreCCLBackend::gather",
	"c10d::SpyreCCLBackend::reduce",
	"c10d::SpyreCCLBackend::send",
	"c10d::SpyreCCLBackend::recv",
	"c10d::SpyreCCLWork::wait",
	"spyre_comms::initialize_library",
	"spyre_comms::get_world_context",
	"spyre_comms::Context::allgather",
	"spyre_comms::Context::allreduce",
	"spyre_comms::Context::barrier",
	"spyre_comms::Context::broadcast",
	"spyre_comms::Context::gather",
	"spyre_comms::Context::reduce",
	"spyre_comms::Context::send",
	"spyre_comms::Context::recv",
	"spyre_comms::Context::getRank",
	"spyre_comms::Context::getSize",
	"spyre_comms::WorkSchedule::query",
};
static_assert(sizeof(g_names) / sizeof(g_names[0]) == API_COUNT, "one name per counter");

const char *const g_thrown_names[THROWN_COUNT] = {
	"flex::FlexAllocator::allocate",
	"spyre::SpyreAllocator::allocate",
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

MOCK_API void countCallback()
{
	g_callbacks.fetch_add(1, std::memory_order_relaxed);
}

MOCK_API uint64_t callbackCount()
{
	return g_callbacks.load(std::memory_order_relaxed);
}

MOCK_API void countEmptyAlloc()
{
	g_empty_allocs.fetch_add(1, std::memory_order_relaxed);
}

MOCK_API uint64_t emptyAllocCount()
{
	return g_empty_allocs.load(std::memory_order_relaxed);
}

MOCK_API void countQueryTrue()
{
	g_queries_true.fetch_add(1, std::memory_order_relaxed);
}

MOCK_API uint64_t queryTrueCount()
{
	return g_queries_true.load(std::memory_order_relaxed);
}

MOCK_API void countThrown(int which)
{
	if (which >= 0 && which < THROWN_COUNT)
		g_thrown[which].fetch_add(1, std::memory_order_relaxed);
}

MOCK_API uint64_t thrownCount(int which)
{
	if (which < 0 || which >= THROWN_COUNT)
		return 0;
	return g_thrown[which].load(std::memory_order_relaxed);
}

MOCK_API const char *thrownName(int which)
{
	return which >= 0 && which < THROWN_COUNT ? g_thrown_names[which] : "?";
}

MOCK_API void resetCounts()
{
	for (auto &c : g_calls)
		c.store(0, std::memory_order_relaxed);
	g_completions.store(0, std::memory_order_relaxed);
	g_callbacks.store(0, std::memory_order_relaxed);
	g_empty_allocs.store(0, std::memory_order_relaxed);
	g_queries_true.store(0, std::memory_order_relaxed);
	for (auto &c : g_thrown)
		c.store(0, std::memory_order_relaxed);
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
