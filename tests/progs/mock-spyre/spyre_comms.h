// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// Mock of libspyre_comms.so.1, the collectives library under torch-spyre's c10d backend. Ranks
// are processes (mock-spyre-job --world-size N) exchanging data through one shared-memory
// segment. Layouts the default probe table reads are pinned by static_asserts. See docs/mock.md.
#ifndef MOCK_SPYRE_COMMS_H
#define MOCK_SPYRE_COMMS_H

#include <stddef.h>
#include <stdint.h>

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace spyre_comms {

enum DataType : int32_t { FLOAT16 = 1, FLOAT32 = 2, INT64 = 3 };
enum class SpyreReductionOpType { SUM, MAX };

// The mock's own layout: torch-spyre builds its spyre_comms::Tensor from a TensorInfo (dtype,
// shape) and the storage's pointer (spyre_ccl.cpp), and no public header shows the real class.
// The default probe table reads bytes at +8 and dtype at +16 of it: an assumption this mock
// satisfies, not a fact about libspyre_comms (docs/mock.md).
struct Tensor {
	void *data;
	uint64_t bytes;
	int32_t dtype;
};
static_assert(offsetof(Tensor, data) == 0, "Tensor layout (default probe table)");
static_assert(offsetof(Tensor, bytes) == 8, "Tensor layout (default probe table)");
static_assert(offsetof(Tensor, dtype) == 16, "Tensor layout (default probe table)");

// One collective of this rank. start() hands it to a thread of its own ("spyre-ccl"); query()
// is true once this rank's part finished.
class WorkSchedule {
public:
	explicit WorkSchedule(std::function<void()> fn) : fn_(std::move(fn)) {}
	~WorkSchedule();
	void start();
	bool query();
	void wait();

private:
	std::function<void()> fn_;
	std::atomic<bool> done_{ false };
	std::thread thread_;
};

// The world's communicator. Every rank must make the same collectives in the same order.
// Arguments in the order torch-spyre's SpyreCCLBackend passes them (spyre_ccl.cpp): outputs
// before the input, the reduction before the root, the tag after the peer. Each returns a
// std::shared_ptr by value: sret = arg1, this = arg2, these from arg3 on.
class Context {
public:
	Context(int rank, int size, void *shm);
	std::shared_ptr<WorkSchedule> allgather(std::vector<Tensor> &outputs, Tensor &input);
	std::shared_ptr<WorkSchedule> allreduce(Tensor &tensor, SpyreReductionOpType op);
	std::shared_ptr<WorkSchedule> barrier();
	std::shared_ptr<WorkSchedule> broadcast(Tensor &tensor, int root);
	std::shared_ptr<WorkSchedule> gather(std::vector<Tensor> &outputs, Tensor &input, int root);
	std::shared_ptr<WorkSchedule> reduce(Tensor &tensor, SpyreReductionOpType op, int root);
	std::shared_ptr<WorkSchedule> send(Tensor &tensor, int dst, int tag);
	std::shared_ptr<WorkSchedule> recv(Tensor &tensor, int src, int tag);
	int getRank() const;
	int getSize() const;

private:
	int rank_;
	int size_;
	void *shm_;
};

// Largest tensor a collective moves (the mock's slots are this big).
constexpr size_t kMaxCollectiveBytes = 4096;

// Sets up the shared segment for a world of @world_size ranks before they start: its name goes
// to the ranks in MOCK_SPYRE_SHM. Returns 0 or a negative errno. (Not in the real library.)
int createWorld(int world_size, char *name, size_t name_len);
// Joins the world named by RANK, WORLD_SIZE and MOCK_SPYRE_SHM (a world of one without them).
// Returns 0 or a negative errno.
int initialize_library();
std::shared_ptr<Context> get_world_context();
// A rank that stops early says so: the others' collectives give up instead of waiting for it.
// (Not in the real library.)
void abortWorld();

} // namespace spyre_comms

#endif
