// The log-prob reduction of LogprobReducer on the device holding the logits (CUDA twin of its host
// path; logprobs.cu, or logprobs_device_none.cpp in a CPU build).
#pragma once

#include <cstdint>

namespace gavel::logprobs_device {

// out[r·k + j] = logits[r][targets[r·k + j]] − logsumexp(logits[r]) for the n rows of nv floats at
// logits (device memory, row-major, contiguous); targets and out are host arrays of k × n. The sum of
// exponentials runs in float64 like the host path. False when there is no CUDA, the pointer is not
// device memory, or a CUDA call failed: the caller then copies the logits to the host and reduces there.
bool RowLogProbs(const float* logits, int64_t nv, int64_t n, const int32_t* targets, int k, float* out);

}  // namespace gavel::logprobs_device
