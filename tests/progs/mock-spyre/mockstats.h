// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// Call accounting for the mock Spyre stack. Not part of any real library's API: the counters let
// the test job report exactly how many calls a tracer should have seen. They live in libflex.so
// (the lowest library; namespace mock_spyre matches no flex::, spyre:: or spyre_comms:: glob) so
// that every library and the job share one set.
#ifndef MOCK_SPYRE_MOCKSTATS_H
#define MOCK_SPYRE_MOCKSTATS_H

#include <stdint.h>

namespace mock_spyre {

// One slot per counted function; apiName() gives the qualified C++ name (docs/mock.md).
enum Api : int {
	/* libflex.so */
	API_INITIALIZE_RUNTIME,
	API_GET_NUM_DEVICES,
	API_GET_DEFAULT_STREAM,
	API_CREATE_STREAM,
	API_STREAM_DTOR,
	API_FLEX_ALLOCATE,
	API_FLEX_DEALLOCATE,
	API_CREATE_DMA_PARAMS,
	API_DESTROY_DMA_PARAMS,
	API_CREATE_COMPUTE_PARAMS,
	API_DESTROY_COMPUTE_PARAMS,
	API_CREATE_HOST_CALLBACK_PARAMS,
	API_DESTROY_HOST_CALLBACK_PARAMS,
	API_LAUNCH_H2D,
	API_LAUNCH_D2H,
	API_LAUNCH_COMPUTE,
	API_LAUNCH_HOST_CALLBACK,
	API_RT_SYNCHRONIZE,
	API_RT_QUERY,
	/* torch_spyre/_C.so */
	API_LAUNCH_JOB_PLAN,
	API_PREPARE_KERNEL,
	API_SS_LAUNCH,
	API_SS_LAUNCH_H2D,
	API_SS_LAUNCH_D2H,
	API_SS_LAUNCH_COMPUTE,
	API_SS_LAUNCH_HOST_CALLBACK,
	API_SS_SYNCHRONIZE,
	API_SS_QUERY,
	API_SYNCHRONIZE_DEVICE,
	API_SPYRE_ALLOCATE,
	API_REPORT_AND_DELETE,
	API_D2H_CALLBACK,
	API_CCL_ALLGATHER,
	API_CCL_ALLREDUCE,
	API_CCL_BARRIER,
	API_CCL_BROADCAST,
	API_CCL_GATHER,
	API_CCL_REDUCE,
	API_CCL_SEND,
	API_CCL_RECV,
	API_CCL_WORK_WAIT,
	/* libspyre_comms.so.1 */
	API_COMMS_INITIALIZE,
	API_COMMS_WORLD_CONTEXT,
	API_CTX_ALLGATHER,
	API_CTX_ALLREDUCE,
	API_CTX_BARRIER,
	API_CTX_BROADCAST,
	API_CTX_GATHER,
	API_CTX_REDUCE,
	API_CTX_SEND,
	API_CTX_RECV,
	API_CTX_GET_RANK,
	API_CTX_GET_SIZE,
	API_WORK_QUERY,
	API_COUNT
};

// Functions a std::bad_alloc can leave (--oom-every); index into thrownCount().
enum Thrown : int {
	THROWN_FLEX_ALLOCATE,
	THROWN_SPYRE_ALLOCATE,
	THROWN_COUNT
};

void countCall(int api);
uint64_t callCount(int api);
const char *apiName(int api);
// Operations a stream worker finished (DMA and compute; host callbacks run in the caller).
void countCompletion();
uint64_t completionCount();
// DMA callbacks flex called (on the stream's worker, after the copy).
void countCallback();
uint64_t callbackCount();
// SpyreAllocator::allocate calls of 0 bytes (a null DataPtr: no pointer, nothing to free).
void countEmptyAlloc();
uint64_t emptyAllocCount();
// RuntimeStream::query calls that returned true (the trace's args.done, a bool, says the same).
void countQueryTrue();
uint64_t queryTrueCount();
void countThrown(int which);
uint64_t thrownCount(int which);
const char *thrownName(int which);
// Zero every counter (the ioctl and byte counters too). Only meaningful while no thread calls
// into the runtime.
void resetCounts();

// The VFIO ioctls libflex.so issues (see docs/mock.md), counted per command whether they succeed
// or not; ioctlName() gives the linux/vfio.h name ("VFIO_IOMMU_MAP_DMA").
enum Ioctl : int {
	IOCTL_GET_API_VERSION,
	IOCTL_CHECK_EXTENSION,
	IOCTL_SET_IOMMU,
	IOCTL_GROUP_GET_STATUS,
	IOCTL_GROUP_SET_CONTAINER,
	IOCTL_GROUP_GET_DEVICE_FD,
	IOCTL_DEVICE_GET_INFO,
	IOCTL_DEVICE_GET_REGION_INFO,
	IOCTL_DEVICE_GET_IRQ_INFO,
	IOCTL_DEVICE_SET_IRQS,
	IOCTL_DEVICE_RESET,
	IOCTL_IOMMU_MAP_DMA,
	IOCTL_IOMMU_UNMAP_DMA,
	IOCTL_COUNT
};

// Bytes through the allocator: allocated and freed as requested (allocate's size), mapped and
// unmapped as given to VFIO_IOMMU_MAP_DMA/UNMAP_DMA that succeeded (whole pages).
enum Bytes : int {
	BYTES_ALLOCATED,
	BYTES_FREED,
	BYTES_MAPPED,
	BYTES_UNMAPPED,
	BYTES_COUNT
};

void countBytes(int which, uint64_t n);
uint64_t byteCount(int which);
const char *bytesName(int which);

// Counts @cmd when it is one of the above.
void countIoctl(unsigned long cmd);
uint64_t ioctlCount(int ioctl);
const char *ioctlName(int ioctl);

} // namespace mock_spyre

#endif
