// The glance's max-sim on a CUDA device: the GPU twin of kernels_core's CPU MaxSim, behind a plain
// interface so that the rest of the addon compiles the same with or without CUDA. In a CPU build
// (no GAVEL_WITH_CUDA) device_none.cpp answers "unavailable" and nothing here is ever constructed.
//
// Contract (the CPU twin's, kernels_core.h): for query row i and skill s, m[i·nSkills + s] is the
// largest inner product of query i with skill s's keys and argmax its key index within the skill
// (ties to the lower index); a skill without keys leaves m = -inf and argmax = -1 (Vote() then sets
// m = -1). Products accumulate in float32 in a different order than on the CPU, so the two twins
// agree to rounding (the tests state the tolerance), not bit for bit.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/kernels_core.h"

namespace gavel::kernels::device {

// True when this addon was compiled with CUDA and a device answers; otherwise false and, when `why`
// is given, the reason in words.
bool Available(std::string* why = nullptr);

// A bank's keys copied to device memory once, reused by every glance until the bank changes.
class DeviceKeys {
 public:
  virtual ~DeviceKeys() = default;
  // Fills m and argmax (nq × nSkills, host memory) for row-major queries (nq × dim). Polls `stop`
  // between launches of ≈4K skills. Throws Failure(Code::ABORTED) when stopped, Failure(Code::CUDA_ERROR)
  // on a device error.
  virtual void MaxSim(const float* queries, int64_t nq, float* m, int32_t* argmax,
                      const std::atomic<bool>* stop) const = 0;
  virtual int64_t Skills() const = 0;
  virtual int64_t Rows() const = 0;
};

// Uploads `keys` (dim floats per row). Throws Failure(Code::CUDA_UNAVAILABLE) in a CPU build or without a
// device, Failure(Code::OUT_OF_MEMORY) when the device cannot hold the bank.
std::unique_ptr<DeviceKeys> Upload(const SkillKeys& keys, int64_t dim);

}  // namespace gavel::kernels::device
