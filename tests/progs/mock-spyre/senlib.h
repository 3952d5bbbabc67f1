// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// Mock of the Spyre device library (libsenlib-dd2.so): just enough surface for libflex.so to open
// devices and ring doorbells, with the real library's symbol names.
#ifndef MOCK_SPYRE_SENLIB_H
#define MOCK_SPYRE_SENLIB_H

#include <atomic>
#include <stdint.h>

namespace senlib {

class SenDevice {
public:
	static constexpr int kMaxDevices = 64;
	static constexpr int kDoorbells = 64;

	// Returns the device with this index, or nullptr when the index is out of range.
	static SenDevice *open(int index);
	// Stands in for an MMIO store to the device BAR: the launch path of every operation.
	void writeDoorbell(uint32_t queue, uint64_t value);
	void close();

	SenDevice(const SenDevice &) = delete;
	SenDevice &operator=(const SenDevice &) = delete;

private:
	SenDevice() = default;

	std::atomic<int> index_{-1};
	std::atomic<int> opens_{0};
	std::atomic<uint64_t> bar_[kDoorbells] = {};
};

} // namespace senlib

#endif
