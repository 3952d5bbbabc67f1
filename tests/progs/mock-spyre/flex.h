// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// Mock of the Spyre runtime library (libflex.so): the part of its API torch-spyre calls, with the
// same names, argument order, by-value returns and threading, so a tracer sees what it would see
// on a real host. The "device" is one worker thread per stream working on host memory. Struct
// layouts the default probe table reads are pinned by static_asserts. See docs/mock.md.
#ifndef MOCK_SPYRE_FLEX_H
#define MOCK_SPYRE_FLEX_H

#include <stddef.h>
#include <stdint.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace flex {

struct LogicalAddress {
	uint32_t region_id;
	// The mock's device memory is host memory: the offset is the buffer's host address.
	uint64_t offset;
};

struct Chunk {
	LogicalAddress addr;
	uint64_t size;
	int domain_id;
};

// Where a tensor lives on the card. Not trivially copyable (a vector): returned by value through
// the hidden result pointer on every ABI.
class CompositeAddress {
public:
	CompositeAddress() = default;
	explicit CompositeAddress(const Chunk &c) : chunks_{ c } {}
	uint64_t total_size() const;
	const std::vector<Chunk> &chunks() const { return chunks_; }

private:
	std::vector<Chunk> chunks_;
};

enum class PlacementPolicy { Bind, Interleave };
enum class MemoryType { Tensor, Program };
enum class RuntimeStreamPriority { Normal, High };
enum class DataFormats { FP16, FP32, INT32 };

// Where to place an allocation. torch-spyre's SpyreAllocator::allocate(size_t) makes one
// {PlacementPolicy::Bind, {0}, ..., MemoryType::Tensor} (spyre_allocator.cpp): a list of devices,
// so its caller has a destructor to run after the allocation (no tail call into it).
struct AllocationDirective {
	AllocationDirective() = default;
	AllocationDirective(PlacementPolicy p, std::vector<int> devs, MemoryType t)
		: policy(p), devices(std::move(devs)), type(t) {}
	int device() const { return devices.empty() ? 0 : devices[0]; }

	PlacementPolicy policy = PlacementPolicy::Bind;
	std::vector<int> devices;
	MemoryType type = MemoryType::Tensor;
};

// Device virtual addresses (DMVA) of job plans: segment << SEGMENT_SIZE_BITS | offset, where a
// launch's tensor i is segment i and PROG_SEGMENT the program's (job_plan.cpp, prepare_kernel.cpp;
// the width is the mock's: no public header gives flex's).
constexpr unsigned SEGMENT_SIZE_BITS = 36;
constexpr uint64_t PROG_SEGMENT = 7;
uint64_t dmvaToSegmentId(uint64_t dmva);

// A DMA between host memory and a CompositeAddress. flex takes what it needs at the launch (the
// callback is moved out), so the caller destroys the params right after launching.
struct DmaParams {
	void *host_ptr;
	size_t size;
	bool to_device;
	const CompositeAddress *device_address;
	// Called with nullptr on the stream's worker thread once the copy completed.
	std::function<void(void *)> callback;
	bool pipeline_barrier;
};
// std::function makes DmaParams non-standard-layout; GCC and Clang lay it out in order all the same.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
static_assert(offsetof(DmaParams, host_ptr) == 0, "DmaParams layout (default probe table)");
static_assert(offsetof(DmaParams, size) == 8, "DmaParams layout (default probe table)");
static_assert(offsetof(DmaParams, to_device) == 16, "DmaParams layout (default probe table)");
static_assert(offsetof(DmaParams, device_address) == 24, "DmaParams layout (default probe table)");
static_assert(offsetof(DmaParams, callback) == 32, "DmaParams layout (default probe table)");
static_assert(offsetof(DmaParams, pipeline_barrier) == 64, "DmaParams layout (default probe table)");
#pragma GCC diagnostic pop

struct ComputeParams {
	const CompositeAddress *program;
	std::vector<const CompositeAddress *> addrs;
	std::string kernel_name;
	uint64_t bootstrap_offset;
	bool pipeline_barrier;
};

struct HostCallbackParams {
	std::function<void(void *)> fn;
	void *arg;
	bool pipeline_barrier;
};

DmaParams *createDmaParams(void *host_ptr, size_t size, bool to_device,
			   const CompositeAddress *device_address);
void destroyDmaParams(DmaParams *params);
ComputeParams *createComputeParams(const CompositeAddress *program,
				   std::vector<const CompositeAddress *> addrs,
				   const std::string &kernel_name, uint64_t bootstrap_offset);
void destroyComputeParams(ComputeParams *params);
HostCallbackParams *createHostCallbackParams(std::function<void(void *)> fn, void *arg,
					     bool pipeline_barrier);
void destroyHostCallbackParams(HostCallbackParams *params);

// An in-order queue of operations run by its own worker thread ("spyre-d<dev>s<id>"). Launches
// return once the operation is queued; its buffers must stay valid until it completed.
class RuntimeStream {
public:
	RuntimeStream(int device, int id);
	// Drains the queue, then joins the worker.
	~RuntimeStream();

	void launchOperationH2D(DmaParams *params);
	void launchOperationD2H(DmaParams *params);
	void launchOperationCompute(ComputeParams *params);
	// Runs the callback in the calling thread once everything launched before it completed.
	void launchOperationHostCallback(HostCallbackParams *params);
	// Blocks until every operation launched on this stream before the call completed.
	void synchronize();
	// True when every operation launched so far completed.
	bool query();
	void fillAsync(const CompositeAddress *dst, double value, DataFormats fmt, bool barrier);
	int device() const { return device_; }
	int id() const { return id_; }

	RuntimeStream(const RuntimeStream &) = delete;
	RuntimeStream &operator=(const RuntimeStream &) = delete;

	struct Impl;	/* opaque */

private:
	Impl *impl_;
	int device_;
	int id_;
};

class FlexAllocator {
public:
	explicit FlexAllocator(int device) : device_(device) {}
	// A page-aligned "device" buffer (host memory, whole pages, mapped with
	// VFIO_IOMMU_MAP_DMA), as one chunk of bytes. Throws std::bad_alloc when it cannot.
	CompositeAddress allocate(size_t bytes, const AllocationDirective &directive);
	// Unmaps and frees what allocate gave. (torch-spyre never calls it: its owner context's
	// destructor gives the memory back; the mock's does so through this.)
	void deallocate(const CompositeAddress &addr);

private:
	int device_;
};

class RuntimeContext {
public:
	explicit RuntimeContext(int num_devices);
	~RuntimeContext();
	// Stream 0 of the device (collectives run there).
	RuntimeStream *getDefaultStream(int device);
	// A new stream of the device: ids from 1 on (33 on for high priority).
	std::shared_ptr<RuntimeStream> createStream(RuntimeStreamPriority priority, int device = 0);
	std::shared_ptr<FlexAllocator> getAllocator();
	int numDevices() const { return num_devices_; }

private:
	int num_devices_;
	std::vector<RuntimeStream *> defaults_;
	std::shared_ptr<FlexAllocator> allocator_;
};

// Opens the devices (VFIO setup, docs/mock.md) and makes the context. Returns 0 or a negative
// errno. Dropping the last reference to the context shuts the runtime down.
int initializeRuntime(std::shared_ptr<RuntimeContext> *out, int num_devices);
int getNumDevices();
std::shared_ptr<RuntimeContext> getFlexRuntimeContext();

} // namespace flex

#endif
