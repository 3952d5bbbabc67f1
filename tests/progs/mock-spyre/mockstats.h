// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// Call accounting for the mock Spyre runtime. Not part of the real runtime's API: the counters let
// the test job report exactly how many calls a tracer should have seen. They live in
// libsenlib-dd2.so (the lowest library) so that libflex.so and the job share one set.
#ifndef MOCK_SPYRE_MOCKSTATS_H
#define MOCK_SPYRE_MOCKSTATS_H

#include <stdint.h>

namespace mock_spyre {

// One slot per counted API function; apiName() gives the qualified C++ name.
enum Api : int {
	API_INITIALIZE_RUNTIME,
	API_GET_NUM_DEVICES,
	API_SHUTDOWN_RUNTIME,
	API_ALLOCATOR_CTOR,
	API_ALLOCATE,
	API_DEALLOCATE,
	API_STREAM_CTOR,
	API_STREAM_DTOR,
	API_LAUNCH_H2D,
	API_LAUNCH_D2H,
	API_LAUNCH_COMPUTE,
	API_LAUNCH_HOST_CALLBACK,
	API_SYNCHRONIZE,
	API_QUERY,
	API_STREAM_DEVICE,
	API_STREAM_ID,
	API_ENCODE_CONTROL_BLOCK,
	API_OPERATION_COMPLETE,
	API_SEN_OPEN,
	API_SEN_WRITE_DOORBELL,
	API_SEN_CLOSE,
	API_COUNT
};

void countCall(int api);
uint64_t callCount(int api);
const char *apiName(int api);
// Operations a stream worker finished (after operationComplete returned).
void countCompletion();
uint64_t completionCount();
// Zero every counter (the ioctl counters too). Only meaningful while no thread calls into the
// runtime.
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
