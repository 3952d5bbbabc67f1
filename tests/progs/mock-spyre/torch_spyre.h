// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// Mock of torch-spyre's extension module (torch_spyre/_C.so): the spyre:: stream, job plan and
// allocator layer over libflex.so, and the c10d SpyreCCL backend over libspyre_comms.so.1, with
// torch-spyre's names. Stand-ins replace PyTorch's types (DataPtr, Tensor). See docs/mock.md.
#ifndef MOCK_SPYRE_TORCH_SPYRE_H
#define MOCK_SPYRE_TORCH_SPYRE_H

#include "flex.h"
#include "spyre_comms.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace spyre {

// What a Spyre tensor's storage points to (spyre_allocator.h).
struct SharedOwnerCtx {
	SharedOwnerCtx(flex::CompositeAddress addr, int dev) : composite_addr(std::move(addr)),
							       device_id(dev) {}
	// Gives the memory back to flex.
	~SharedOwnerCtx();
	flex::CompositeAddress composite_addr;
	int device_id;
};

// c10::DataPtr's shape: data, owner context, deleter, device. Owns the context: its destructor
// calls the deleter (SpyreAllocator::ReportAndDelete). The first word is the SharedOwnerCtx*.
class DataPtr {
public:
	DataPtr(void *data, void *ctx, void (*deleter)(void *), int device)
		: data_(data), ctx_(ctx), deleter_(deleter), device_(device) {}
	DataPtr(DataPtr &&o) noexcept : data_(o.data_), ctx_(o.release()), deleter_(o.deleter_),
					device_(o.device_) {}
	DataPtr(const DataPtr &) = delete;
	DataPtr &operator=(const DataPtr &) = delete;
	~DataPtr();
	void *get() const { return data_; }
	void *get_context() const { return ctx_; }
	// Gives up ownership: nothing is freed (--leak).
	void *release()
	{
		void *c = ctx_;

		ctx_ = nullptr;
		return c;
	}

private:
	void *data_;
	void *ctx_;
	void (*deleter_)(void *);
	int device_;
};

struct SpyreAllocator {
	static SpyreAllocator &instance();
	// c10's entry (what PyTorch calls): the tensor placement of device 0, through the overload
	// below, as in spyre_allocator.cpp.
	DataPtr allocate(size_t nbytes);
	// Device memory through flex::FlexAllocator::allocate; throws std::bad_alloc when flex
	// does. 0 bytes: a null DataPtr (no pointer, nothing to free), flex not called.
	DataPtr allocate(size_t nbytes, const flex::AllocationDirective &directive);
	// The free path: deletes the owner context (and so gives the memory back).
	static void ReportAndDelete(void *ctx);
};

// A device tensor, as far as the job plans care: its storage's owner context.
struct Tensor {
	SharedOwnerCtx *ctx;
};

class SpyreStream;
class JobPlan;

struct LaunchContext {
	const std::vector<Tensor> &inputs_outputs;
};

struct JobPlanStep {
	virtual ~JobPlanStep() = default;
	virtual void construct(LaunchContext &ctx, const SpyreStream &stream) const = 0;
};

struct JobPlanStepH2D : JobPlanStep {
	JobPlanStepH2D(void *host, const flex::CompositeAddress &dev) : host_address_(host),
									 device_address_(dev) {}
	void construct(LaunchContext &ctx, const SpyreStream &stream) const override;
	void *host_address_;
	flex::CompositeAddress device_address_;
	bool pipeline_barrier_ = false;
};

// Copies back into host memory, as job_plan.cpp does: from a CompositeAddress (torch-spyre:
// the program's segment) without a DMA callback, or from a DMVA in a tensor's segment (tensor i
// of the launch is segment i), through a CompositeAddress made at construct time that a DMA
// callback keeps alive: the only DMA torch-spyre gives a callback.
struct JobPlanStepD2H : JobPlanStep {
	struct Dmva {
		uint64_t value;
	};
	JobPlanStepD2H(flex::CompositeAddress device_address, void *host, size_t size)
		: device_address_(std::move(device_address)), host_address_(host), size_(size) {}
	JobPlanStepD2H(uint64_t dmva, void *host, size_t size)
		: device_address_(Dmva{ dmva }), host_address_(host), size_(size) {}
	void construct(LaunchContext &ctx, const SpyreStream &stream) const override;
	std::variant<flex::CompositeAddress, Dmva> device_address_;
	void *host_address_;
	size_t size_;
	bool pipeline_barrier_ = false;
};

// A kernel: name "<profiler_name>#<step>"; the mock's program carries its duration (ns) as the
// bootstrap offset.
struct JobPlanStepCompute : JobPlanStep {
	JobPlanStepCompute(std::string name, uint64_t work_ns) : name_(std::move(name)),
								 bootstrap_offset_(work_ns) {}
	void construct(LaunchContext &ctx, const SpyreStream &stream) const override;
	std::string name_;
	flex::CompositeAddress program_address_;
	uint64_t bootstrap_offset_;
	bool bind_io_addresses_ = true;
	bool pipeline_barrier_ = false;
};

struct JobPlanStepHostCompute : JobPlanStep {
	explicit JobPlanStepHostCompute(std::function<void()> fn) : fn_(std::move(fn)) {}
	void construct(LaunchContext &ctx, const SpyreStream &stream) const override;
	std::function<void()> fn_;
	bool pipeline_barrier_ = false;
};

class JobPlan {
public:
	void add(std::unique_ptr<JobPlanStep> step) { steps_.push_back(std::move(step)); }
	const std::vector<std::unique_ptr<JobPlanStep>> &steps() const { return steps_; }

private:
	std::vector<std::unique_ptr<JobPlanStep>> steps_;
};

// A handle of a flex stream (cheap to copy).
class SpyreStream {
public:
	explicit SpyreStream(std::shared_ptr<flex::RuntimeStream> s) : owner_(std::move(s)),
									 rt_(owner_.get()) {}
	explicit SpyreStream(flex::RuntimeStream *s) : rt_(s) {}
	int id() const { return rt_->id(); }
	int device() const { return rt_->device(); }
	bool query() const;
	void synchronize() const;
	void launch(const JobPlan &plan, const std::vector<Tensor> &args) const;
	void launchH2D(flex::DmaParams *params) const;
	void launchD2H(flex::DmaParams *params) const;
	void launchCompute(flex::ComputeParams *params) const;
	void launchHostCallback(flex::HostCallbackParams *params) const;
	void fillAsync(const flex::CompositeAddress *dst, double value, flex::DataFormats fmt,
		       bool barrier) const;
	void copyAsyncImpl(void *cpu_ptr, const flex::CompositeAddress *dev, bool to_device) const;

private:
	std::shared_ptr<flex::RuntimeStream> owner_;
	flex::RuntimeStream *rt_;
};

// Module start (what torch_spyre's _C does when imported): the flex runtime for @devices.
// Returns 0 or a negative errno. shutdownRuntime() drops it.
int startRuntime(int devices);
void shutdownRuntime();
int deviceCount();
SpyreStream getStreamFromPool(int device);
SpyreStream getDefaultStream(int device);
// Waits for every stream of the device.
void synchronizeDevice(int device);
void launchJobPlan(const SpyreStream &stream, const JobPlan &plan, const std::vector<Tensor> &args);
// The plan of one kernel.
JobPlan prepareKernel(const std::string &kernel_name, uint64_t work_ns);

} // namespace spyre

namespace c10d {

class SpyreCCLWork {
public:
	explicit SpyreCCLWork(std::shared_ptr<spyre_comms::WorkSchedule> ws) : work_schedule_(ws) {}
	// Zero: block; else poll query() every 100 µs until done, false at the deadline.
	bool wait(std::chrono::milliseconds timeout);

private:
	std::shared_ptr<spyre_comms::WorkSchedule> work_schedule_;
};

using WorkPtr = std::shared_ptr<SpyreCCLWork>;

class SpyreCCLBackend {
public:
	// Joins the world (spyre_comms::initialize_library, get_world_context).
	SpyreCCLBackend();
	bool ok() const { return (bool)ctx_; }
	WorkPtr allgather(std::vector<spyre_comms::Tensor> &outputs, spyre_comms::Tensor &input);
	WorkPtr allreduce(std::vector<spyre_comms::Tensor> &tensors);
	WorkPtr barrier();
	WorkPtr broadcast(std::vector<spyre_comms::Tensor> &tensors, int root);
	WorkPtr gather(std::vector<spyre_comms::Tensor> &outputs, spyre_comms::Tensor &input, int root);
	WorkPtr reduce(std::vector<spyre_comms::Tensor> &tensors, int root);
	WorkPtr send(std::vector<spyre_comms::Tensor> &tensors, int dst, int tag);
	WorkPtr recv(std::vector<spyre_comms::Tensor> &tensors, int src, int tag);
	int rank() const { return rank_; }
	int size() const { return size_; }

private:
	WorkPtr started(std::shared_ptr<spyre_comms::WorkSchedule> ws);
	std::shared_ptr<spyre_comms::Context> ctx_;
	int rank_ = 0;
	int size_ = 1;
};

} // namespace c10d

#endif
