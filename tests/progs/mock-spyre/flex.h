// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// Mock of the Spyre runtime library (libflex.so). Names, argument order and threading follow what
// torch-spyre calls on the real runtime, so a tracer sees the same probes; the "device" is a
// worker thread per stream operating on host memory. See docs/mock.md.
#ifndef MOCK_SPYRE_FLEX_H
#define MOCK_SPYRE_FLEX_H

#include <stddef.h>
#include <stdint.h>

namespace flex {

// Opens devices 0..num_devices-1. Returns 0, or a negative errno.
int initializeRuntime(int num_devices);
int getNumDevices();
// Closes the devices. Destroy every RuntimeStream first.
void shutdownRuntime();

class FlexAllocator {
public:
	explicit FlexAllocator(int device);
	// Frees whatever the caller did not deallocate.
	~FlexAllocator();
	// Returns a page-aligned "device" buffer (host memory, whole pages, mapped for DMA with
	// VFIO_IOMMU_MAP_DMA), nullptr on failure.
	void *allocate(size_t bytes, int flags);
	void deallocate(void *ptr);

	FlexAllocator(const FlexAllocator &) = delete;
	FlexAllocator &operator=(const FlexAllocator &) = delete;

private:
	struct Impl;
	Impl *impl_;
	int device_;
};

class RuntimeStream;
namespace detail {
void encodeControlBlock(RuntimeStream *stream, uint64_t op_id);
}

// An in-order queue of operations executed by its own worker thread ("spyre-d<dev>s<id>").
// Launches return once the operation is queued; the buffers must stay valid until it completed.
class RuntimeStream {
public:
	RuntimeStream(int device, int id);
	// Drains the queue, then joins the worker.
	~RuntimeStream();

	// Each returns the operation id (process-wide, from 1), or 0 when the launch was refused.
	uint64_t launchOperationH2D(void *dev_dst, const void *host_src, size_t bytes);
	uint64_t launchOperationD2H(void *host_dst, const void *dev_src, size_t bytes);
	uint64_t launchOperationCompute(const char *kernel, void *dev_buf, size_t elems,
					uint64_t work_ns);
	uint64_t launchOperationHostCallback(void (*fn)(void *), void *arg);
	// Blocks until every operation launched so far on this stream completed.
	void synchronize();
	// True when the stream is idle.
	bool query();
	int device() const;
	int id() const;

	RuntimeStream(const RuntimeStream &) = delete;
	RuntimeStream &operator=(const RuntimeStream &) = delete;

private:
	friend void detail::encodeControlBlock(RuntimeStream *stream, uint64_t op_id);
	struct Impl;
	Impl *impl_;
	int device_;
	int id_;
};

namespace detail {

// Builds the control block of a compute launch (called inside launchOperationCompute).
void encodeControlBlock(RuntimeStream *stream, uint64_t op_id);

enum OpKind { OP_COMPUTE = 0, OP_H2D = 1, OP_D2H = 2, OP_HOST_CALLBACK = 3 };

// Called on the stream's worker thread when an operation completed.
void operationComplete(RuntimeStream *stream, uint64_t op_id, int kind, size_t bytes);

} // namespace detail

} // namespace flex

#endif
