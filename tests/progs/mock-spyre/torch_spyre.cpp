// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// torch_spyre/_C.so mock: streams, job plans and the allocator over libflex.so; the SpyreCCL
// backend over libspyre_comms.so.1. Compiled -O2 like the real module: the one-line
// SpyreStream forwarders become tail calls into libflex (a `jmp` through the PLT).

#include "torch_spyre.h"
#include "mockstats.h"

#include <errno.h>
#include <time.h>

#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>

#define MOCK_API __attribute__((visibility("default")))

using mock_spyre::countCall;

namespace {

std::mutex g_lock;
std::shared_ptr<flex::RuntimeContext> g_runtime;
// Every pool stream made, per device, so synchronizeDevice can wait for them.
std::vector<std::weak_ptr<flex::RuntimeStream>> g_pool;

} // namespace

namespace spyre {

SharedOwnerCtx::~SharedOwnerCtx()
{
	std::shared_ptr<flex::RuntimeContext> rt = flex::getFlexRuntimeContext();

	if (rt)
		rt->getAllocator()->deallocate(composite_addr);
}

DataPtr::~DataPtr()
{
	if (ctx_ && deleter_)
		deleter_(ctx_);
}

MOCK_API SpyreAllocator &SpyreAllocator::instance()
{
	static SpyreAllocator allocator;

	return allocator;
}

// Counted here, not in the overload below: the job calls this one only, so its count is each
// overload's (a tracer traces both, one span each per allocation).
MOCK_API DataPtr SpyreAllocator::allocate(size_t nbytes)
{
	countCall(mock_spyre::API_SPYRE_ALLOCATE);

	flex::AllocationDirective directive(flex::PlacementPolicy::Bind, { 0 },
					    flex::MemoryType::Tensor);

	return allocate(nbytes, directive);
}

MOCK_API DataPtr SpyreAllocator::allocate(size_t nbytes, const flex::AllocationDirective &directive)
{
	if (!nbytes) {
		mock_spyre::countEmptyAlloc();
		return DataPtr(nullptr, nullptr, &ReportAndDelete, directive.device());
	}
	flex::CompositeAddress addr =
		flex::getFlexRuntimeContext()->getAllocator()->allocate(nbytes, directive);
	auto *ctx = new SharedOwnerCtx(std::move(addr), directive.device());

	// data and context are both the owner, as in torch-spyre
	return DataPtr(ctx, ctx, &ReportAndDelete, directive.device());
}

MOCK_API void SpyreAllocator::ReportAndDelete(void *ctx)
{
	countCall(mock_spyre::API_REPORT_AND_DELETE);
	delete static_cast<SharedOwnerCtx *>(ctx);
}

void JobPlanStepH2D::construct(LaunchContext &, const SpyreStream &stream) const
{
	flex::DmaParams *params = flex::createDmaParams(host_address_, device_address_.total_size(),
							true, &device_address_);

	params->pipeline_barrier = pipeline_barrier_;
	stream.launchH2D(params);
	flex::destroyDmaParams(params);
}

void JobPlanStepD2H::construct(LaunchContext &ctx, const SpyreStream &stream) const
{
	if (std::holds_alternative<flex::CompositeAddress>(device_address_)) {
		const auto &addr = std::get<flex::CompositeAddress>(device_address_);
		flex::DmaParams *params = flex::createDmaParams(host_address_, addr.total_size(),
								false, &addr);

		params->pipeline_barrier = pipeline_barrier_;
		stream.launchD2H(params);
		flex::destroyDmaParams(params);
		return;
	}
	uint64_t dmva = std::get<Dmva>(device_address_).value;
	uint64_t segment = flex::dmvaToSegmentId(dmva);
	uint64_t offset = dmva - (segment << flex::SEGMENT_SIZE_BITS);

	if (segment >= ctx.inputs_outputs.size())
		throw std::out_of_range("D2H tensor-segment lookup out of range");
	const flex::Chunk &base = ctx.inputs_outputs[segment].ctx->composite_addr.chunks().at(0);
	// kept alive by the callback until flex is done with the copy
	auto device_address = std::make_shared<flex::CompositeAddress>(flex::Chunk{
		{ base.addr.region_id, base.addr.offset + offset }, size_, base.domain_id });
	flex::DmaParams *params = flex::createDmaParams(host_address_, device_address->total_size(),
							false, device_address.get());

	params->pipeline_barrier = pipeline_barrier_;
	params->callback = [device_address](void *) {
		countCall(mock_spyre::API_D2H_CALLBACK);
	};
	stream.launchD2H(params);
	flex::destroyDmaParams(params);
}

void JobPlanStepCompute::construct(LaunchContext &ctx, const SpyreStream &stream) const
{
	std::vector<const flex::CompositeAddress *> tensor_allocs;

	if (bind_io_addresses_)
		for (const Tensor &t : ctx.inputs_outputs)
			tensor_allocs.push_back(&t.ctx->composite_addr);
	flex::ComputeParams *params = flex::createComputeParams(
		&program_address_, std::move(tensor_allocs), name_, bootstrap_offset_);

	params->pipeline_barrier = pipeline_barrier_;
	stream.launchCompute(params);
	flex::destroyComputeParams(params);
}

void JobPlanStepHostCompute::construct(LaunchContext &, const SpyreStream &stream) const
{
	flex::HostCallbackParams *params = flex::createHostCallbackParams(
		[this](void *) { fn_(); }, nullptr, pipeline_barrier_);

	stream.launchHostCallback(params);
	flex::destroyHostCallbackParams(params);
}

MOCK_API bool SpyreStream::query() const
{
	countCall(mock_spyre::API_SS_QUERY);
	return rt_->query();
}

MOCK_API void SpyreStream::synchronize() const
{
	countCall(mock_spyre::API_SS_SYNCHRONIZE);
	rt_->synchronize();
}

MOCK_API void SpyreStream::launch(const JobPlan &plan, const std::vector<Tensor> &args) const
{
	countCall(mock_spyre::API_SS_LAUNCH);

	LaunchContext ctx{ args };

	for (const auto &step : plan.steps())
		step->construct(ctx, *this);
}

MOCK_API void SpyreStream::launchH2D(flex::DmaParams *params) const
{
	countCall(mock_spyre::API_SS_LAUNCH_H2D);
	rt_->launchOperationH2D(params);
}

MOCK_API void SpyreStream::launchD2H(flex::DmaParams *params) const
{
	countCall(mock_spyre::API_SS_LAUNCH_D2H);
	rt_->launchOperationD2H(params);
}

MOCK_API void SpyreStream::launchCompute(flex::ComputeParams *params) const
{
	countCall(mock_spyre::API_SS_LAUNCH_COMPUTE);
	rt_->launchOperationCompute(params);
}

MOCK_API void SpyreStream::launchHostCallback(flex::HostCallbackParams *params) const
{
	countCall(mock_spyre::API_SS_LAUNCH_HOST_CALLBACK);
	rt_->launchOperationHostCallback(params);
}

MOCK_API void SpyreStream::fillAsync(const flex::CompositeAddress *dst, double value,
				     flex::DataFormats fmt, bool barrier) const
{
	rt_->fillAsync(dst, value, fmt, barrier);
}

MOCK_API void SpyreStream::copyAsyncImpl(void *cpu_ptr, const flex::CompositeAddress *dev,
					 bool to_device) const
{
	flex::DmaParams *params = flex::createDmaParams(cpu_ptr, dev->total_size(), to_device, dev);

	if (to_device)
		launchH2D(params);
	else
		launchD2H(params);
	flex::destroyDmaParams(params);
}

MOCK_API int startRuntime(int devices)
{
	std::lock_guard<std::mutex> lk(g_lock);

	if (g_runtime)
		return -EBUSY;
	return flex::initializeRuntime(&g_runtime, devices);
}

MOCK_API void shutdownRuntime()
{
	std::lock_guard<std::mutex> lk(g_lock);

	g_pool.clear();
	g_runtime.reset();
}

MOCK_API int deviceCount()
{
	return flex::getNumDevices();
}

MOCK_API SpyreStream getStreamFromPool(int device)
{
	std::lock_guard<std::mutex> lk(g_lock);
	std::shared_ptr<flex::RuntimeStream> s =
		g_runtime->createStream(flex::RuntimeStreamPriority::Normal, device);

	g_pool.push_back(s);
	return SpyreStream(std::move(s));
}

MOCK_API SpyreStream getDefaultStream(int device)
{
	std::lock_guard<std::mutex> lk(g_lock);

	return SpyreStream(g_runtime->getDefaultStream(device));
}

MOCK_API void synchronizeDevice(int device)
{
	countCall(mock_spyre::API_SYNCHRONIZE_DEVICE);

	std::vector<std::shared_ptr<flex::RuntimeStream>> live;
	flex::RuntimeStream *def;
	{
		std::lock_guard<std::mutex> lk(g_lock);
		size_t keep = 0;

		for (size_t i = 0; i < g_pool.size(); i++) {
			std::shared_ptr<flex::RuntimeStream> s = g_pool[i].lock();

			if (!s)
				continue;
			g_pool[keep++] = g_pool[i];
			if (s->device() == device)
				live.push_back(std::move(s));
		}
		g_pool.resize(keep);
		def = g_runtime->getDefaultStream(device);
	}
	if (def)
		def->synchronize();
	for (auto &s : live)
		s->synchronize();
}

MOCK_API void launchJobPlan(const SpyreStream &stream, const JobPlan &plan,
			    const std::vector<Tensor> &args)
{
	countCall(mock_spyre::API_LAUNCH_JOB_PLAN);
	stream.launch(plan, args);
}

MOCK_API JobPlan prepareKernel(const std::string &kernel_name, uint64_t work_ns)
{
	countCall(mock_spyre::API_PREPARE_KERNEL);

	JobPlan plan;

	plan.add(std::make_unique<JobPlanStepCompute>(kernel_name, work_ns));
	return plan;
}

} // namespace spyre

namespace c10d {

MOCK_API bool SpyreCCLWork::wait(std::chrono::milliseconds timeout)
{
	countCall(mock_spyre::API_CCL_WORK_WAIT);
	if (timeout.count() <= 0) {
		work_schedule_->wait();
		return true;
	}
	auto deadline = std::chrono::steady_clock::now() + timeout;

	while (!work_schedule_->query()) {
		if (std::chrono::steady_clock::now() > deadline)
			return false;
		std::this_thread::sleep_for(std::chrono::microseconds(100));
	}
	work_schedule_->wait();
	return true;
}

SpyreCCLBackend::SpyreCCLBackend()
{
	if (spyre_comms::initialize_library())
		return;
	ctx_ = spyre_comms::get_world_context();
	if (ctx_) {
		rank_ = ctx_->getRank();
		size_ = ctx_->getSize();
	}
}

WorkPtr SpyreCCLBackend::started(std::shared_ptr<spyre_comms::WorkSchedule> ws)
{
	ws->start();
	return std::make_shared<SpyreCCLWork>(std::move(ws));
}

MOCK_API WorkPtr SpyreCCLBackend::allgather(std::vector<spyre_comms::Tensor> &outputs,
					    spyre_comms::Tensor &input)
{
	countCall(mock_spyre::API_CCL_ALLGATHER);
	if ((int)outputs.size() != ctx_->getSize())
		return nullptr;
	return started(ctx_->allgather(outputs, input));
}

MOCK_API WorkPtr SpyreCCLBackend::allreduce(std::vector<spyre_comms::Tensor> &tensors)
{
	countCall(mock_spyre::API_CCL_ALLREDUCE);
	return started(ctx_->allreduce(tensors.at(0), spyre_comms::SpyreReductionOpType::SUM));
}

MOCK_API WorkPtr SpyreCCLBackend::barrier()
{
	countCall(mock_spyre::API_CCL_BARRIER);
	return started(ctx_->barrier());
}

MOCK_API WorkPtr SpyreCCLBackend::broadcast(std::vector<spyre_comms::Tensor> &tensors, int root)
{
	countCall(mock_spyre::API_CCL_BROADCAST);
	return started(ctx_->broadcast(tensors.at(0), root));
}

MOCK_API WorkPtr SpyreCCLBackend::gather(std::vector<spyre_comms::Tensor> &outputs,
					 spyre_comms::Tensor &input, int root)
{
	countCall(mock_spyre::API_CCL_GATHER);
	// as torch-spyre's: only the root hands spyre_comms its output tensors
	std::vector<spyre_comms::Tensor> none;
	bool root_here = root == ctx_->getRank();

	if (root_here && (int)outputs.size() != ctx_->getSize())
		return nullptr;
	return started(ctx_->gather(root_here ? outputs : none, input, root));
}

MOCK_API WorkPtr SpyreCCLBackend::reduce(std::vector<spyre_comms::Tensor> &tensors, int root)
{
	countCall(mock_spyre::API_CCL_REDUCE);
	return started(ctx_->reduce(tensors.at(0), spyre_comms::SpyreReductionOpType::SUM, root));
}

MOCK_API WorkPtr SpyreCCLBackend::send(std::vector<spyre_comms::Tensor> &tensors, int dst, int tag)
{
	countCall(mock_spyre::API_CCL_SEND);
	return started(ctx_->send(tensors.at(0), dst, tag));
}

MOCK_API WorkPtr SpyreCCLBackend::recv(std::vector<spyre_comms::Tensor> &tensors, int src, int tag)
{
	countCall(mock_spyre::API_CCL_RECV);
	return started(ctx_->recv(tensors.at(0), src, tag));
}

} // namespace c10d
