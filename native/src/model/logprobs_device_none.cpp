// logprobs_device.h in a CPU build: no device, so the reducer reduces on the host.
#include "model/logprobs_device.h"

#ifndef GAVEL_WITH_CUDA
namespace gavel::logprobs_device {

bool RowLogProbs(const float*, int64_t, int64_t, const int32_t*, int, float*) { return false; }

}  // namespace gavel::logprobs_device
#endif
